import time

import torch


class Trainer(object):
    def __init__(self, model, optimizer, lr_scheduler, config):
        self.model = model
        self.optimizer = optimizer
        self.lr_scheduler = lr_scheduler
        self.grad_max_norm = config["grad_max_norm"]
        self.disp_freq = config["disp_freq"]
        self.num_epoch = config["num_epoch"]
        self.step = 0

    def train(self, tr_loader):
        for epoch in range(self.num_epoch):
            tr_loss = self.iter_one_epoch(tr_loader, epoch)
            print("Epoch {} done, training loss {:.4f}".format(epoch, tr_loss))

    def iter_one_epoch(self, loader, epoch):
        self.model.train()
        tot_loss = 0.
        tot_token = 0
        tot_sequence = 0
        tot_err_num = 0
        timer = time.time()
        for niter, (utts, data) in enumerate(loader):
            niter += 1
            padded_waveforms, wave_lengths, ids, labels, paddings = data
            this_loss, this_err_num, this_token, this_sequence = self.model(
                padded_waveforms, wave_lengths, ids, labels, paddings)
            batch_loss = torch.sum(this_loss)
            batch_token = torch.sum(this_token).item()
            loss = batch_loss / batch_token
            self.optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.grad_max_norm)
            self.optimizer.step()
            self.lr_scheduler.step()
            self.step += 1

            tot_loss = tot_loss + batch_loss.item()
            tot_token = tot_token + batch_token
            tot_sequence = tot_sequence + torch.sum(this_sequence).item()
            tot_err_num = tot_err_num + torch.sum(this_err_num).item()

            if niter % self.disp_freq == 0:
                print("Epoch {} | Step {} | Iter {} | avg loss {:.4f} | time {:.1f}s".format(
                    epoch, self.step, niter, tot_loss / tot_token, time.time() - timer))
        return tot_loss / tot_token
