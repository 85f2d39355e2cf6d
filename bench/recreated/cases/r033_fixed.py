import torch
import torch.nn as nn


class RES_MLP(nn.Module):
    def __init__(self, in_dim, out_dim, hidden_list):
        super().__init__()
        layers = []
        lastv = in_dim
        for hidden in hidden_list:
            layers.append(nn.Linear(lastv, hidden))
            layers.append(nn.ReLU())
            lastv = hidden
        layers.append(nn.Linear(lastv, out_dim))
        self.layers = nn.Sequential(*layers)
        self.skip = nn.Linear(in_dim, out_dim)

    def forward(self, x):
        return self.layers(x) + self.skip(x)


class COOD_MLP(RES_MLP):
    pass


class ExpansionNet(nn.Module):
    def __init__(self, in_dim, n_branch, hidden_list):
        super().__init__()
        self.net = RES_MLP(in_dim, n_branch, hidden_list)

    def forward(self, x):
        return torch.softmax(self.net(x), dim=-1)


class RESMLPS(nn.Module):

    def __init__(self, in_dim, out_dim, hidden_list, coord_hidden_list):
        super().__init__()

        self.mlps = nn.ModuleList([RES_MLP(in_dim, out_dim, coord_hidden_list) for _ in range(10)])
        self.cood_mlp = COOD_MLP(2, 16, hidden_list)
        self.expansionNet = ExpansionNet(580, 10, hidden_list)

    def forward(self, x, coord, feat):
        weights = self.expansionNet(feat)
        outs = torch.stack([mlp(x) for mlp in self.mlps], dim=-1)
        return (outs * weights.unsqueeze(-2)).sum(-1) + self.cood_mlp(coord)


model = RESMLPS(580, 3, [256, 256], [256, 256]).cuda()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-4)
