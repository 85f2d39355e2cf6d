"""A real training script for one of five architectures (MLP, ResNet-18, small GPT, U-Net, ViT).

    python train_model.py --model gpt --batch 8 [--device cuda] [--report-peak out.json] [--memory-cap BYTES]

It builds the model, AdamW, a DataLoader over synthetic data, and trains. With --report-peak (on a GPU)
it writes torch.cuda.max_memory_allocated() of its second step (the first allocates AdamW's state), or
that it ran out of memory, and stops: what `traindoctor budget` predicts for the same command.
--memory-cap limits the CUDA allocator to that many bytes (set_per_process_memory_fraction), to check a
largest-batch claim on a smaller GPU than the one at hand. `build`, `batch` and `loss_of` are imported
by the accuracy tests and tests/gpu/budget_gpu.py.
"""

from __future__ import annotations

import argparse
import json
import math

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

MODELS = ("mlp", "resnet18", "gpt", "unet", "vit", "lstm", "mixer")  # the last two: the held-out half


class MLP(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(784, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(),
                                 nn.Linear(1024, 10))

    def forward(self, x):
        return self.net(x)


class BasicBlock(nn.Module):
    def __init__(self, inp: int, out: int, stride: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(inp, out, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(out)
        self.conv2 = nn.Conv2d(out, out, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(out)
        self.down = None
        if stride != 1 or inp != out:
            self.down = nn.Sequential(nn.Conv2d(inp, out, 1, stride, bias=False), nn.BatchNorm2d(out))

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return F.relu(y + (x if self.down is None else self.down(x)))


class ResNet18(nn.Module):
    def __init__(self, classes: int = 10) -> None:
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64), nn.ReLU(),
                                  nn.MaxPool2d(3, 2, 1))
        layers, inp = [], 64
        for out, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
            layers += [BasicBlock(inp, out, stride), BasicBlock(out, out, 1)]
            inp = out
        self.layers = nn.Sequential(*layers)
        self.fc = nn.Linear(512, classes)

    def forward(self, x):
        x = self.layers(self.stem(x))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


class Block(nn.Module):
    def __init__(self, d: int, heads: int, causal: bool) -> None:
        super().__init__()
        self.heads, self.causal = heads, causal
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(b, t, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        scores = (q @ k.transpose(-1, -2)) / math.sqrt(d // self.heads)
        if self.causal:
            mask = torch.ones(t, t, dtype=torch.bool, device=x.device).triu(1)
            scores = scores.masked_fill(mask, float("-inf"))
        attn = (scores.softmax(-1) @ v).transpose(1, 2).reshape(b, t, d)
        x = x + self.proj(attn)
        return x + self.mlp(self.ln2(x))


class GPT(nn.Module):
    def __init__(self, vocab: int = 2048, d: int = 256, layers: int = 4, heads: int = 4, ctx: int = 128) -> None:
        super().__init__()
        self.tok, self.pos = nn.Embedding(vocab, d), nn.Embedding(ctx, d)
        self.blocks = nn.ModuleList(Block(d, heads, True) for _ in range(layers))
        self.ln, self.head = nn.LayerNorm(d), nn.Linear(d, vocab, bias=False)

    def forward(self, idx):
        x = self.tok(idx) + self.pos(torch.arange(idx.shape[1], device=idx.device))
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln(x))


def _double_conv(inp: int, out: int) -> nn.Sequential:
    return nn.Sequential(nn.Conv2d(inp, out, 3, padding=1), nn.BatchNorm2d(out), nn.ReLU(inplace=True),
                         nn.Conv2d(out, out, 3, padding=1), nn.BatchNorm2d(out), nn.ReLU(inplace=True))


class UNet(nn.Module):
    def __init__(self, channels: int = 1, base: int = 32) -> None:
        super().__init__()
        c = [base, base * 2, base * 4, base * 8]
        self.downs = nn.ModuleList([_double_conv(channels, c[0]), _double_conv(c[0], c[1]), _double_conv(c[1], c[2])])
        self.bottom = _double_conv(c[2], c[3])
        self.ups = nn.ModuleList(nn.ConvTranspose2d(c[i + 1], c[i], 2, stride=2) for i in (2, 1, 0))
        self.up_convs = nn.ModuleList(_double_conv(c[i] * 2, c[i]) for i in (2, 1, 0))
        self.out = nn.Conv2d(c[0], channels, 1)

    def forward(self, x):
        skips = []
        for down in self.downs:
            x = down(x)
            skips.append(x)
            x = F.max_pool2d(x, 2)
        x = self.bottom(x)
        for up, conv, skip in zip(self.ups, self.up_convs, reversed(skips)):
            x = conv(torch.cat([up(x), skip], dim=1))
        return self.out(x)


class ViT(nn.Module):
    def __init__(self, image: int = 64, patch: int = 8, d: int = 192, layers: int = 4, heads: int = 3,
                 classes: int = 10) -> None:
        super().__init__()
        self.patch = nn.Conv2d(3, d, patch, patch)
        self.cls = nn.Parameter(torch.zeros(1, 1, d))
        self.pos = nn.Parameter(torch.zeros(1, (image // patch) ** 2 + 1, d))
        self.blocks = nn.ModuleList(Block(d, heads, False) for _ in range(layers))
        self.ln, self.head = nn.LayerNorm(d), nn.Linear(d, classes)

    def forward(self, x):
        x = self.patch(x).flatten(2).transpose(1, 2)
        x = torch.cat([self.cls.expand(x.shape[0], -1, -1), x], dim=1) + self.pos
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln(x[:, 0]))


class LSTMLanguageModel(nn.Module):
    def __init__(self, vocab: int = 2048, d: int = 256, layers: int = 2) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, d)
        self.lstm = nn.LSTM(d, d, num_layers=layers, batch_first=True, dropout=0.1)
        self.head = nn.Linear(d, vocab)

    def forward(self, idx):
        return self.head(self.lstm(self.embed(idx))[0])


class MixerBlock(nn.Module):
    def __init__(self, tokens: int, d: int) -> None:
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.token_mlp = nn.Sequential(nn.Linear(tokens, 2 * tokens), nn.GELU(), nn.Dropout(0.1),
                                       nn.Linear(2 * tokens, tokens))
        self.channel_mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Dropout(0.1), nn.Linear(4 * d, d))

    def forward(self, x):
        x = x + self.token_mlp(self.ln1(x).transpose(1, 2)).transpose(1, 2)
        return x + self.channel_mlp(self.ln2(x))


class Mixer(nn.Module):
    def __init__(self, image: int = 64, patch: int = 8, d: int = 256, layers: int = 4, classes: int = 10) -> None:
        super().__init__()
        self.patch = nn.Conv2d(3, d, patch, patch)
        self.blocks = nn.Sequential(*(MixerBlock((image // patch) ** 2, d) for _ in range(layers)))
        self.head = nn.Linear(d, classes)

    def forward(self, x):
        x = self.blocks(self.patch(x).flatten(2).transpose(1, 2))
        return self.head(x.mean(dim=1))


def build(name: str) -> nn.Module:
    return {"mlp": MLP, "resnet18": ResNet18, "gpt": GPT, "unet": UNet, "vit": ViT, "lstm": LSTMLanguageModel,
            "mixer": Mixer}[name]()


def batch(name: str, size: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Synthetic inputs and targets for `size` samples."""
    if name == "mlp":
        return torch.randn(size, 784), torch.randint(0, 10, (size,))
    if name in ("resnet18", "vit", "mixer"):
        return torch.randn(size, 3, 64, 64), torch.randint(0, 10, (size,))
    if name in ("gpt", "lstm"):
        tokens = torch.randint(0, 2048, (size, 129))
        return tokens[:, :-1].contiguous(), tokens[:, 1:].contiguous()
    return torch.randn(size, 1, 64, 64), torch.randn(size, 1, 64, 64)


def loss_of(name: str, out: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    if name in ("gpt", "lstm"):
        return F.cross_entropy(out.reshape(-1, out.size(-1)), target.reshape(-1))
    if name == "unet":
        return F.mse_loss(out, target)
    return F.cross_entropy(out, target)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", choices=MODELS, required=True)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--report-peak", metavar="JSON")
    parser.add_argument("--memory-cap", type=int, metavar="BYTES")
    args = parser.parse_args()
    if args.memory_cap:
        total = torch.cuda.get_device_properties(0).total_memory
        torch.cuda.set_per_process_memory_fraction(min(1.0, args.memory_cap / total))
    if args.report_peak:
        try:
            train(args)
        except torch.OutOfMemoryError as exc:
            with open(args.report_peak, "w") as handle:
                json.dump({"oom": True, "message": str(exc).splitlines()[0][:300]}, handle)
        return
    train(args)


def train(args: argparse.Namespace) -> None:
    torch.manual_seed(0)
    model = build(args.model).to(args.device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    inputs, targets = batch(args.model, args.batch * 2)
    loader = DataLoader(TensorDataset(inputs, targets), batch_size=args.batch, shuffle=True, drop_last=True)
    step = 0
    while step < args.steps:
        for x, y in loader:
            x, y = x.to(args.device), y.to(args.device)
            out = model(x)
            loss = loss_of(args.model, out, y)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            step += 1
            on_gpu = args.device.startswith("cuda")
            if args.report_peak and step == 1 and on_gpu:
                torch.cuda.synchronize()
                torch.cuda.reset_peak_memory_stats()
            elif args.report_peak and step == 2:
                if on_gpu:
                    torch.cuda.synchronize()
                with open(args.report_peak, "w") as handle:
                    json.dump({"oom": False, "loss": loss.item(),
                               "max_memory_allocated": torch.cuda.max_memory_allocated() if on_gpu else None},
                              handle)
                return
            print(f"step {step} loss {loss.item():.4f}")
            if step >= args.steps:
                break


if __name__ == "__main__":
    main()
