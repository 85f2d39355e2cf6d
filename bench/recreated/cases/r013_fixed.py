import torch
import torch.nn as nn


class StackedGRUCell(nn.Module):
    def __init__(self, input_size, hidden_size, layn, bias=True):
        super(StackedGRUCell, self).__init__()
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.bias = bias
        self.x2h = nn.ModuleList()
        self.h2h = nn.ModuleList()
        for x in range(layn):
            temp1 = nn.Linear(input_size, 3 * hidden_size, bias=self.bias)
            temp2 = nn.Linear(hidden_size, 3 * hidden_size, bias=self.bias).to("cuda:0")
            self.x2h.append(temp1)
            self.h2h.append(temp2)
            input_size = hidden_size

    def forward(self, x, hidden):
        outputs = []
        for x2h, h2h in zip(self.x2h, self.h2h):
            gate_x = x2h(x)
            gate_h = h2h(hidden)
            i_r, i_i, i_n = gate_x.chunk(3, 1)
            h_r, h_i, h_n = gate_h.chunk(3, 1)
            resetgate = torch.sigmoid(i_r + h_r)
            inputgate = torch.sigmoid(i_i + h_i)
            newgate = torch.tanh(i_n + (resetgate * h_n))
            hidden = newgate + inputgate * (hidden - newgate)
            outputs.append(hidden)
            x = hidden
        return outputs


model = StackedGRUCell(32, 64, layn=2).to("cuda:0")
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
