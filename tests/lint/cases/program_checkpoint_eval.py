"""A small research script: an encoder whose blocks live in a plain list, a
training step moved into a no_grad block by mistake, an evaluation that forgets to
call no_grad, and a whole model saved and reloaded on torch >= 2.6. Next to them,
the correct forms: a teacher under no_grad, an adversarial step under enable_grad,
ModuleDict heads, state_dict checkpoints."""
import torch
import torch.nn as nn
import torch.nn.functional as F
import torchvision


class Encoder(nn.Module):
    def __init__(self, dim, depth):
        super().__init__()
        self.blocks = [nn.TransformerEncoderLayer(dim, 4) for _ in range(depth)]  # expect: TRN705
        self.heads = nn.ModuleDict({"cls": nn.Linear(dim, 10), "reg": nn.Linear(dim, 1)})
        self.activations = [nn.GELU(), nn.Tanh()]
        self.drop = nn.Dropout(0.1)

    def forward(self, x):
        for block in self.blocks:
            x = block(x)
        x = self.drop(x.mean(1))
        return F.dropout(self.heads["cls"](x), 0.1, training=self.training)


def distill_step(student, teacher, x, optimizer):
    with torch.no_grad():
        target = teacher(x).softmax(-1)
    loss = F.kl_div(student(x).log_softmax(-1), target, reduction="batchmean")
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()


def buggy_step(model, x, y, optimizer):
    with torch.no_grad():
        logits = model(x)
        loss = F.cross_entropy(logits, y)
    optimizer.zero_grad()
    loss.backward()  # expect: TRN603
    optimizer.step()


@torch.no_grad()
def fgsm(model, x, y, eps=0.03):
    with torch.enable_grad():
        x = x.clone().requires_grad_(True)
        loss = F.cross_entropy(model(x), y)
        loss.backward()
    return (x + eps * x.grad.sign()).detach()


def evaluate(model, loader):
    model.eval()
    correct = 0
    with torch.inference_mode:  # expect: TRN601
        for x, y in loader:
            correct += (model(x)["cls"].argmax(-1) == y).sum().item()
    model.train()
    return correct


def checkpoint(model, optimizer, path):
    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict()}, path)
    state = torch.load(path, map_location="cpu")
    model.load_state_dict(state["model"])


def export(model):
    torch.save(model, "encoder_full.pt")
    return torch.load("encoder_full.pt")  # expect: TRN602


def transfer(classes, lr=0.01):
    model = torchvision.models.resnet18(weights="DEFAULT")
    optimizer = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9)
    model.fc = nn.Linear(model.fc.in_features, classes)  # expect: TRN707
    return model, optimizer


def transfer_ok(classes, lr=0.01):
    model = torchvision.models.resnet18(weights="DEFAULT")
    model.fc = nn.Linear(model.fc.in_features, classes)
    return model, torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9)
