import torch
from torch import optim


class NERTrainer(object):
    def __init__(self, train_data=None, dev_data=None, model=None, args=None, logger=None):
        self.train_data = train_data
        self.dev_data = dev_data
        self.model = model
        self.args = args
        self.logger = logger
        self.optimizer = None
        self.multiModal_before_train()

    def train(self):
        self.model.train()
        for epoch in range(1, self.args.num_epochs + 1):
            for batch in self.train_data:
                batch = (tup.to(self.args.device) if isinstance(tup, torch.Tensor) else tup for tup in batch)
                attention_mask, labels, logits, loss = self._step(batch)
                loss.backward()
                self.optimizer.step()
                self.optimizer.zero_grad()

    def _step(self, batch):
        input_ids, token_type_ids, attention_mask, labels, images, aux_imgs = batch
        logits, loss = self.model(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids,
                                  labels=labels, images=images, aux_imgs=aux_imgs)
        return attention_mask, labels, logits, loss

    def multiModal_before_train(self):
        # bert lr
        parameters = []
        params = {'lr': self.args.lr, 'weight_decay': 1e-2}
        params['params'] = []
        for name, param in self.model.named_parameters():
            if 'bert' in name:
                params['params'].append(param)
        parameters.append(params)

        # prompt lr
        params = {'lr': self.args.lr, 'weight_decay': 1e-2}
        params['params'] = []
        for name, param in self.model.named_parameters():
            if 'encoder_conv' in name or 'gates' in name:
                params['params'].append(param)
        parameters.append(params)

        # crf lr
        params = {'lr': 5e-2, 'weight_decay': 1e-2}
        params['params'] = []
        for name, param in self.model.named_parameters():
            if 'crf' in name or name.startswith('fc'):
                params['params'].append(param)

        self.optimizer = optim.AdamW(parameters)
        self.model.to(self.args.device)
