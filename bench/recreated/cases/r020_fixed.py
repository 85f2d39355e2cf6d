import torch
import torch.nn as nn


class AverageMeter(object):
    def __init__(self):
        self.sum, self.count, self.avg = 0, 0, 0

    def update(self, val, n=1):
        self.sum += val * n
        self.count += n
        self.avg = self.sum / self.count


def accumulate_acc(output, target, task, meter, topk):
    pred = output.argmax(dim=1)
    meter.update((pred == target).float().mean().item() * 100, len(target))
    return meter


class NormalNN(nn.Module):
    def __init__(self, learner_config):
        super(NormalNN, self).__init__()
        self.config = learner_config
        self.model = learner_config['model']
        self.gpu = learner_config['gpuid'][0] > 0
        self.valid_out_dim = learner_config['out_dim']
        self.top_k = learner_config['top_k']

    def validation(self, dataloader, model=None, task_in=None, task_metric='acc', verbal=True, task_global=False):

        if model is None:
            model = self.model

        # This function doesn't distinguish tasks.
        acc = AverageMeter()
        orig_mode = model.training
        model.eval()
        with torch.no_grad():
            for i, (input, target, task) in enumerate(dataloader):

                if self.gpu:
                    input = input.cuda()
                    target = target.cuda()
                if task_in is None:
                    output = model.forward(input)[:, :self.valid_out_dim]
                    acc = accumulate_acc(output, target, task, acc, topk=(self.top_k,))
                else:
                    mask = target >= task_in[0]
                    mask_ind = mask.nonzero().view(-1)
                    input, target = input[mask_ind], target[mask_ind]
                    if len(target) > 1:
                        output = model.forward(input)[:, task_in]
                        acc = accumulate_acc(output, target - task_in[0], task, acc, topk=(self.top_k,))

        model.train(orig_mode)
        if verbal:
            print(' * Val Acc {acc.avg:.3f}'.format(acc=acc))
        return acc.avg
