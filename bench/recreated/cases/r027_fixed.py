import numpy as np
import torch
from torch import nn


class PyTorchClassifier(object):
    def __init__(self, inputdim, nclasses, l2reg=0., batch_size=64, seed=1111, cudaEfficient=False):
        # fix seed
        np.random.seed(seed)
        torch.manual_seed(seed)
        torch.cuda.manual_seed(seed)

        self.inputdim = inputdim
        self.nclasses = nclasses
        self.l2reg = l2reg
        self.batch_size = batch_size
        self.cudaEfficient = cudaEfficient
        self.model = nn.Sequential(nn.Linear(self.inputdim, self.nclasses)).cuda()
        self.loss_fn = nn.CrossEntropyLoss().cuda()
        self.optimizer = torch.optim.Adam(self.model.parameters(), weight_decay=self.l2reg)

    def trainepoch(self, X, y, epoch_size=1):
        self.model.train()
        for _ in range(epoch_size):
            permutation = np.random.permutation(len(X))
            for i in range(0, len(X), self.batch_size):
                idx = torch.from_numpy(permutation[i:i + self.batch_size]).long().to(X.device)
                Xbatch = X[idx].cuda()
                ybatch = y[idx].cuda()
                output = self.model(Xbatch)
                loss = self.loss_fn(output, ybatch)
                self.optimizer.zero_grad()
                loss.backward()
                self.optimizer.step()

    def score(self, devX, devy):
        self.model.eval()
        correct = 0
        if not isinstance(devX, torch.cuda.FloatTensor) or self.cudaEfficient:
            devX = torch.FloatTensor(devX).cuda()
            devy = torch.LongTensor(devy).cuda()
        with torch.no_grad():
            for i in range(0, len(devX), self.batch_size):
                Xbatch = devX[i:i + self.batch_size]
                ybatch = devy[i:i + self.batch_size]
                if self.cudaEfficient:
                    Xbatch = Xbatch.cuda()
                    ybatch = ybatch.cuda()
                output = self.model(Xbatch)
                pred = output.data.max(1)[1]
                correct += pred.long().eq(ybatch.data.long()).sum().item()
        accuracy = 1.0 * correct / len(devX)
        return accuracy
