"""A research-style script: a GAN and a regression loop written by hand, with some
steps out of order; correct look-alikes next to them."""
import torch
import torch.nn as nn

device = "cuda" if torch.cuda.is_available() else "cpu"
G = nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 2)).to(device)
D = nn.Sequential(nn.Linear(2, 64), nn.LeakyReLU(0.2), nn.Linear(64, 1)).to(device)
opt_g = torch.optim.Adam(G.parameters(), lr=2e-4, betas=(0.5, 0.999))
opt_d = torch.optim.Adam(D.parameters(), lr=2e-4, betas=(0.5, 0.999))
bce = nn.BCEWithLogitsLoss()


def sample_real(n):
    return torch.randn(n, 2, device=device) * 0.5 + 1.0


def train_gan(steps, batch_size=64):
    for step in range(steps):
        real = sample_real(batch_size)
        z = torch.randn(batch_size, 16, device=device)
        ones = torch.ones(batch_size, 1).to(device)  # expect: TRN503
        zeros = torch.zeros(batch_size, 1, device=device)
        opt_d.zero_grad()
        d_loss = bce(D(real), ones) + bce(D(G(z).detach()), zeros)
        d_loss.backward()
        opt_d.step()
        opt_g.zero_grad()
        g_loss = bce(D(G(z)), ones)
        g_loss.backward()
        opt_g.step()
        torch.cuda.empty_cache()  # expect: TRN505
        if step % 500 == 0:
            print(step, d_loss.item(), g_loss.item())


class Regressor(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(8, 32), nn.Dropout(0.1), nn.Linear(32, 1))

    def forward(self, x):
        return self.net(x)


def fit_regressor(loader, val_loader, epochs):
    model = Regressor().to(device)
    model.train()
    best = float("inf")
    for epoch in range(epochs):
        optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)  # expect: TRN706
        for x, y in loader:
            x, y = x.to(device), y.to(device)
            loss = nn.functional.mse_loss(model(x), y)
            loss.backward()
            optimizer.zero_grad()  # expect: TRN702
            optimizer.step()
        model.eval()  # expect: TRN703
        with torch.no_grad():
            val = sum(nn.functional.mse_loss(model(x.to(device)), y.to(device)).item() for x, y in val_loader)
        best = min(best, val)
    return model, best


def finetune_head(model, loader, epochs=3):
    head_opt = torch.optim.AdamW(model.net[-1].parameters(), lr=1e-3)
    for epoch in range(epochs):
        model.train()
        for x, y in loader:
            pred = model(x.to(device))
            loss = nn.functional.mse_loss(pred, y.to(device))
            loss.backward()  # expect: TRN701
            head_opt.step()
    return model
