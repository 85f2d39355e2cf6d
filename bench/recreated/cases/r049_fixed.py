import torch
import torch.nn as nn
import torch.optim as optim


class Extractor(nn.Module):
    def __init__(self):
        super(Extractor, self).__init__()
        self.extractor = nn.Sequential(
            nn.Conv2d(in_channels=3, out_channels=32, kernel_size=5), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(in_channels=32, out_channels=50, kernel_size=5), nn.BatchNorm2d(50), nn.Dropout2d(),
            nn.ReLU(), nn.MaxPool2d(2))

    def forward(self, x):
        x = self.extractor(x)
        x = x.view(-1, 50 * 4 * 4)
        return x


class Classifier(nn.Module):
    def __init__(self):
        super(Classifier, self).__init__()
        self.classifier = nn.Sequential(
            nn.Linear(in_features=50 * 4 * 4, out_features=100),
            nn.BatchNorm1d(100),
            nn.ReLU(),
            nn.Dropout(),
            nn.Linear(in_features=100, out_features=100),
            nn.BatchNorm1d(100),
            nn.ReLU(),
            nn.Linear(in_features=100, out_features=10)
        )

    def forward(self, x):
        x = self.classifier(x)
        return x


def source_only(encoder, classifier, source_train_loader, epochs=100):
    print("Source-only training")
    classifier_criterion = nn.CrossEntropyLoss().cuda()
    optimizer = optim.SGD(list(encoder.parameters()) + list(classifier.parameters()), lr=0.01, momentum=0.9)
    for epoch in range(epochs):
        encoder.train()
        classifier.train()
        for batch_idx, (source_image, source_label) in enumerate(source_train_loader):
            source_image, source_label = source_image.cuda(), source_label.cuda()
            optimizer.zero_grad()
            source_feature = encoder(source_image)
            class_pred = classifier(source_feature)
            class_loss = classifier_criterion(class_pred, source_label)
            class_loss.backward()
            optimizer.step()
