import time

import torch
import torch.nn.functional as F

import dataHelper
import models
import opts
import utils

opt = opts.parse_opt()
train_iter, test_iter = dataHelper.loadData(opt)
model = models.setup(opt)
if torch.cuda.is_available():
    model.cuda()
model.train()
print("# parameters:", sum(param.numel() for param in model.parameters() if param.requires_grad))
optimizer = utils.getOptimizer(model.parameters(), opt)
loss_fun = F.cross_entropy

filename = None
percisions = []
for i in range(opt.max_epoch):
    for epoch, batch in enumerate(train_iter):
        start = time.time()

        text = batch.text[0] if opt.from_torchtext else batch.text
        predicted = model(text)

        loss = loss_fun(predicted, batch.label)

        loss.backward()
        utils.clip_gradient(optimizer, opt.grad_clip)
        optimizer.step()
        if epoch % 100 == 0:
            if torch.cuda.is_available():
                print("%d iteration %d epoch with loss : %.5f in %.4f seconds" % (i, epoch, loss.cpu().data.numpy(), time.time() - start))
            else:
                print("%d iteration %d epoch with loss : %.5f in %.4f seconds" % (i, epoch, loss.data.numpy(), time.time() - start))

    percision = utils.evaluation(model, test_iter, opt.from_torchtext)
    print("%d iteration with percision %.4f" % (i, percision))
