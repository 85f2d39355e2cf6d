import torch
import torch.nn as nn
import torch.nn.functional as F
from torchvision import models


class WeightedFocalLoss(nn.Module):
    "Non weighted version of Focal Loss"
    def __init__(self, alpha=.25, gamma=2):
        super(WeightedFocalLoss, self).__init__()
        self.alpha = torch.tensor([alpha, 1 - alpha]).cuda()
        self.gamma = gamma

    def forward(self, inputs, targets):
        BCE_loss = F.binary_cross_entropy_with_logits(inputs, targets, reduction='none')
        targets = targets.type(torch.long)
        at = self.alpha.gather(0, targets.data.view(-1))
        pt = torch.exp(-BCE_loss)
        F_loss = at * (1 - pt) ** self.gamma * BCE_loss
        return F_loss.mean()


class MixStyleResCausalModel(nn.Module):
    def __init__(self, model_name='resnet50', pretrained=True, num_classes=1):
        super(MixStyleResCausalModel, self).__init__()
        model_resnet = getattr(models, model_name)(pretrained=pretrained)
        self.features = nn.Sequential(*list(model_resnet.children())[:-1])
        self.classifier = nn.Sequential(
            nn.Linear(model_resnet.fc.in_features, num_classes),
            nn.Sigmoid(),
        )

    def forward(self, x):
        x = self.features(x).flatten(1)
        return self.classifier(x)


def train_epoch(model, train_loader, optimizer, device):
    criterion = WeightedFocalLoss(alpha=0.25, gamma=2)
    model.train()
    for i, (images, labels) in enumerate(train_loader):
        images, labels = images.to(device), labels.to(device).float()
        output = model(images).squeeze(1)
        loss = criterion(output, labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
