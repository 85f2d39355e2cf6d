import torch
import torch.nn as nn
import torch.optim as optim
from torch.optim.lr_scheduler import ReduceLROnPlateau


class ChexnetTrainer():

    def epochTrain(model, dataLoader, optimizer, scheduler, epochMax, classCount, loss):
        model.train()
        for batchID, (input, target) in enumerate(dataLoader):
            target = target.cuda(non_blocking=True)
            varInput = torch.autograd.Variable(input)
            varTarget = torch.autograd.Variable(target)
            varOutput = model(varInput)
            lossvalue = loss(varOutput, varTarget)
            optimizer.zero_grad()
            lossvalue.backward()
            optimizer.step()

    def epochVal(model, dataLoader, optimizer, scheduler, epochMax, classCount, loss):
        model.eval()
        lossVal = 0
        lossValNorm = 0
        losstensorMean = 0
        for i, (input, target) in enumerate(dataLoader):
            target = target.cuda(non_blocking=True)
            varInput = torch.autograd.Variable(input, volatile=True)
            varTarget = torch.autograd.Variable(target, volatile=True)
            varOutput = model(varInput)
            losstensor = loss(varOutput, varTarget)
            losstensorMean += losstensor
            lossVal += losstensor.item()
            lossValNorm += 1
        outLoss = lossVal / lossValNorm
        losstensorMean = losstensorMean / lossValNorm
        return outLoss, losstensorMean

    def train(model, dataLoaderTrain, dataLoaderVal, nnClassCount, trMaxEpoch):
        optimizer = optim.Adam(model.parameters(), lr=0.0001, betas=(0.9, 0.999), eps=1e-08, weight_decay=1e-5)
        scheduler = ReduceLROnPlateau(optimizer, factor=0.1, patience=5, mode='min')
        loss = nn.BCELoss(reduction='mean')
        lossMIN = 100000
        for epochID in range(0, trMaxEpoch):
            ChexnetTrainer.epochTrain(model, dataLoaderTrain, optimizer, scheduler, trMaxEpoch, nnClassCount, loss)
            lossVal, losstensor = ChexnetTrainer.epochVal(model, dataLoaderVal, optimizer, scheduler, trMaxEpoch,
                                                          nnClassCount, loss)
            scheduler.step(losstensor.item())
            if lossVal < lossMIN:
                lossMIN = lossVal
                torch.save({'epoch': epochID + 1, 'state_dict': model.state_dict(), 'best_loss': lossMIN,
                            'optimizer': optimizer.state_dict()}, 'm-best.pth.tar')
