"""Variants of the MNIST and transfer-learning tutorials' evaluation loops, with the
reduction='sum' or `* inputs.size(0)` left out or the denominators swapped."""
import torch
import torch.nn.functional as F

def accuracy(out, y):
    return (out.argmax(1) == y).float().mean()

def test(model, device, test_loader):
    model.eval()
    test_loss = 0
    correct = 0
    with torch.no_grad():
        for data, target in test_loader:
            data, target = data.to(device), target.to(device)
            output = model(data)
            test_loss += F.nll_loss(output, target).item()
            pred = output.argmax(dim=1, keepdim=True)
            correct += pred.eq(target.view_as(pred)).sum().item()
    test_loss /= len(test_loader.dataset)  # expect: TRN304
    print(100. * correct / len(test_loader.dataset))

def train_model(model, dataloaders, criterion, phase):
    running_loss = 0.0
    running_corrects = 0
    acc_total = 0
    for inputs, labels in dataloaders[phase]:
        outputs = model(inputs)
        _, preds = torch.max(outputs, 1)
        loss = criterion(outputs, labels)
        running_loss += loss.item() * inputs.size(0)
        running_corrects += torch.sum(preds == labels.data)
        acc_total += accuracy(outputs, labels)
    epoch_loss = running_loss / len(dataloaders[phase].dataset)
    epoch_acc = running_corrects.double() / len(dataloaders[phase])  # expect: TRN304
    print(acc_total / len(dataloaders[phase].dataset))  # expect: TRN304
    return epoch_loss, epoch_acc
