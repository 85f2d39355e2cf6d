import torch
import torch.nn as nn
import torch.optim as optim
import torch_xla.core.xla_model as xm
import torch_xla.distributed.parallel_loader as pl
import torch_xla.distributed.xla_multiprocessing as xmp
from torchvision import datasets, transforms

FLAGS = {'datadir': '/tmp/fashionmnist', 'batch_size': 128, 'num_workers': 4,
         'learning_rate': 0.01, 'momentum': 0.5, 'num_epochs': 20, 'log_steps': 20}
SERIAL_EXEC = xmp.MpSerialExecutor()


class AlexNet(nn.Module):
    def __init__(self, num_classes=10):
        super(AlexNet, self).__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 64, kernel_size=3, padding=1), nn.ReLU(inplace=True), nn.MaxPool2d(2),
            nn.Conv2d(64, 192, kernel_size=3, padding=1), nn.ReLU(inplace=True), nn.MaxPool2d(2))
        self.classifier = nn.Sequential(nn.Dropout(), nn.Linear(192 * 7 * 7, num_classes))

    def forward(self, x):
        return self.classifier(torch.flatten(self.features(x), 1))


def train_fmnist():
    def get_dataset():
        norm = transforms.Normalize((0.1307,), (0.3081,))
        return datasets.FashionMNIST(FLAGS['datadir'], train=True, download=True,
                                     transform=transforms.Compose([transforms.ToTensor(), norm]))

    train_dataset = SERIAL_EXEC.run(get_dataset)
    train_sampler = torch.utils.data.distributed.DistributedSampler(
        train_dataset,
        num_replicas=xm.xrt_world_size(),
        rank=xm.get_ordinal(),
        shuffle=True)
    train_loader = torch.utils.data.DataLoader(
        train_dataset,
        batch_size=FLAGS['batch_size'],
        sampler=train_sampler,
        num_workers=FLAGS['num_workers'],
        drop_last=True)

    device = xm.xla_device()
    model = AlexNet().to(device)
    optimizer = optim.SGD(model.parameters(), lr=FLAGS['learning_rate'] * xm.xrt_world_size(),
                          momentum=FLAGS['momentum'], weight_decay=5e-4)
    loss_fn = nn.NLLLoss()

    def train_loop_fn(loader):
        tracker = xm.RateTracker()
        model.train()
        for x, (data, target) in enumerate(loader):
            optimizer.zero_grad()
            output = model(data)
            loss = loss_fn(output, target)
            loss.backward()
            xm.optimizer_step(optimizer)
            tracker.add(FLAGS['batch_size'])
            if x % FLAGS['log_steps'] == 0:
                print('[xla:{}]({}) Loss={:.5f} Rate={:.2f}'.format(xm.get_ordinal(), x, loss.item(), tracker.rate()))

    for epoch in range(1, FLAGS['num_epochs'] + 1):
        para_loader = pl.ParallelLoader(train_loader, [device])
        train_loop_fn(para_loader.per_device_loader(device))
        xm.master_print("Finished training epoch {}".format(epoch))


def _mp_fn(rank, flags):
    torch.set_default_tensor_type('torch.FloatTensor')
    train_fmnist()


if __name__ == '__main__':
    xmp.spawn(_mp_fn, args=(FLAGS,), nprocs=8, start_method='fork')
