import numpy as np
import torch
import torch.nn as nn
import torch.optim as optim


class Net(nn.Module):
    def __init__(self, input_dim, output_dim=1, layers=(256,), loss="mse"):
        super(Net, self).__init__()
        layers = [input_dim] + list(layers)
        dnn_layers = []
        drop_input = nn.Dropout(0.05)
        dnn_layers.append(drop_input)
        for i, (_input_dim, hidden_units) in enumerate(zip(layers[:-1], layers[1:])):
            fc = nn.Linear(_input_dim, hidden_units)
            activation = nn.LeakyReLU(negative_slope=0.1, inplace=False)
            bn = nn.BatchNorm1d(hidden_units)
            seq = nn.Sequential(fc, bn, activation)
            dnn_layers.append(seq)
        if loss == "mse":
            fc = nn.Linear(hidden_units, output_dim)
            dnn_layers.append(fc)
        elif loss == "binary":
            fc = nn.Linear(hidden_units, output_dim)
            dnn_layers.append(fc)
        self.dnn_layers = nn.ModuleList(dnn_layers)

    def forward(self, x):
        cur_output = x
        for i, now_layer in enumerate(self.dnn_layers):
            cur_output = now_layer(cur_output)
        return cur_output


class DNNModelPytorch:
    def __init__(self, input_dim, loss="binary", lr=0.002, max_steps=300, batch_size=2000):
        self.loss_type = loss
        self.max_steps = max_steps
        self.batch_size = batch_size
        self.dnn_model = Net(input_dim, 1, loss=loss)
        self.train_optimizer = optim.Adam(self.dnn_model.parameters(), lr=lr)

    def get_loss(self, pred, w, target, loss_type):
        if loss_type == "mse":
            sqr_loss = torch.mul(pred - target, pred - target)
            loss = torch.mul(sqr_loss, w).mean()
            return loss
        elif loss_type == "binary":
            loss = nn.BCEWithLogitsLoss(weight=w)
            return loss(pred, target)
        else:
            raise NotImplementedError("loss {} is not supported!".format(loss_type))

    def fit(self, x_train, y_train, w_train):
        self.dnn_model.train()
        for step in range(self.max_steps):
            choice = np.random.choice(len(x_train), self.batch_size)
            x_batch = torch.from_numpy(x_train[choice]).float()
            y_batch = torch.from_numpy(y_train[choice]).float()
            w_batch = torch.from_numpy(w_train[choice]).float()
            preds = self.dnn_model(x_batch)
            cur_loss = self.get_loss(preds, w_batch, y_batch, self.loss_type)
            self.train_optimizer.zero_grad()
            cur_loss.backward()
            self.train_optimizer.step()
