import torch
import torch.nn as nn
from tqdm import tqdm

from mvtn.utils import forward_system, auto_grad_normalize
from models.mvtn import MVTN
from models.multi_view import FullCrossViewAttention


def train(data_loader, models_bag, setup, epoch):
    train_size = len(data_loader)
    criterion = nn.CrossEntropyLoss()
    total_loss = 0.0
    n = 0
    correct = 0
    total = 0

    models_bag["mvnetwork"].train()
    models_bag["mvtn"].train()
    models_bag["mvrenderer"].train()
    for i, (targets, meshes, points) in enumerate(tqdm(data_loader)):
        c_batch_size = targets.shape[0]
        targets = targets.cuda()
        outputs, _, _ = forward_system(
            models_bag=models_bag, setup=setup, targets=targets, meshes=meshes, points=points)
        loss = criterion(outputs, targets)
        models_bag["optimizer"].zero_grad()
        models_bag["mvtn_optimizer"].zero_grad()
        loss.backward()
        if setup["clip_grads"]:
            auto_grad_normalize(models_bag["mvtn"], setup["mvtn_clip_grads_value"])
        models_bag["optimizer"].step()
        models_bag["mvtn_optimizer"].step()

        total_loss += loss.item()
        n += 1
        _, predicted = torch.max(outputs.data, 1)
        total += c_batch_size
        correct += (predicted.cpu() == targets.cpu()).sum()
        if i % 50 == 0:
            print("[%d/%d] epoch %d loss %.4f" % (i, train_size, epoch, loss.item()))

    avg_loss = total_loss / n
    avg_train_acc = 100 * correct / total
    return avg_train_acc, avg_loss


def main(setup, train_loader):
    models_bag = {
        "mvnetwork": FullCrossViewAttention(setup["mvnetwork"], num_classes=40).cuda(),
        "mvtn": MVTN(setup["nb_views"]).cuda(),
        "mvrenderer": setup["renderer"],
    }
    models_bag["optimizer"] = torch.optim.AdamW(models_bag["mvnetwork"].parameters(), lr=setup["learning_rate"])
    models_bag["mvtn_optimizer"] = torch.optim.AdamW(models_bag["mvtn"].parameters(), lr=setup["pc_learning_rate"])
    for epoch in range(setup["epochs"]):
        acc, avg_loss = train(train_loader, models_bag, setup, epoch)
        print("epoch %d train acc %.2f loss %.4f" % (epoch, acc, avg_loss))
