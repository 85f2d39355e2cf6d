"""Speed of `traindoctor budget` on a 7B-parameter decoder (goal: < 60 s, < 4 GB of RSS on this machine).

The script is a Llama-7B-shaped decoder written the usual way for a GPU (32 layers, d_model 4096, 32
heads, SwiGLU 11008, vocabulary 32000, RMSNorm, bf16 weights, AdamW, batch 1 x 2048 tokens from a
DataLoader, `.cuda()`, `loss.item()` logged). `traindoctor budget` runs it with fake tensors through the
full default plan: warm-up, the measured step, the batch x2 and x4, and the four measured levers (eight
fake steps). Reports the wall time of the whole command, the CPU time and the peak RSS of the largest
process (the script's, under the bootstrap), against the goals, and the estimate itself.

    .venv/bin/python bench/bench_budget_7b.py [--no-levers]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

SCRIPT = textwrap.dedent(
    """
    import torch, torch.nn as nn, torch.nn.functional as F
    from torch.utils.data import DataLoader, TensorDataset

    class RMSNorm(nn.Module):
        def __init__(self, d):
            super().__init__(); self.weight = nn.Parameter(torch.ones(d))
        def forward(self, x):
            return x * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + 1e-6).to(x.dtype) * self.weight

    class Layer(nn.Module):
        def __init__(self, d=4096, heads=32, hidden=11008):
            super().__init__()
            self.heads = heads
            self.attn_norm, self.mlp_norm = RMSNorm(d), RMSNorm(d)
            self.q, self.k, self.v, self.o = (nn.Linear(d, d, bias=False) for _ in range(4))
            self.gate, self.up = nn.Linear(d, hidden, bias=False), nn.Linear(d, hidden, bias=False)
            self.down = nn.Linear(hidden, d, bias=False)
        def forward(self, x):
            b, t, d = x.shape
            h = self.attn_norm(x)
            q, k, v = (p(h).view(b, t, self.heads, d // self.heads).transpose(1, 2) for p in (self.q, self.k, self.v))
            a = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(b, t, d)
            x = x + self.o(a)
            h = self.mlp_norm(x)
            return x + self.down(F.silu(self.gate(h)) * self.up(h))

    class Decoder(nn.Module):
        def __init__(self, vocab=32000, d=4096, layers=32):
            super().__init__()
            self.embed = nn.Embedding(vocab, d)
            self.layers = nn.ModuleList(Layer(d) for _ in range(layers))
            self.norm, self.head = RMSNorm(d), nn.Linear(d, vocab, bias=False)
        def forward(self, idx):
            x = self.embed(idx)
            for layer in self.layers:
                x = layer(x)
            return self.head(self.norm(x))

    model = Decoder().to(torch.bfloat16).cuda()
    print(f"{sum(p.numel() for p in model.parameters()) / 1e9:.2f}B parameters")
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-5)
    tokens = torch.randint(0, 32000, (8, 2049))
    loader = DataLoader(TensorDataset(tokens[:, :-1], tokens[:, 1:]), batch_size=1)
    for x, y in loader:
        x, y = x.cuda(), y.cuda()
        logits = model(x)
        loss = F.cross_entropy(logits.flatten(0, 1).float(), y.flatten())
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        print("loss", loss.item())
    """
)

GOAL_SECONDS, GOAL_RSS = 60.0, 4 << 30


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--no-levers", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-budget-") as tmp:
        script = Path(tmp) / "train_7b.py"
        script.write_text(SCRIPT)
        command = [sys.executable, "-m", "traindoctor", "budget", "--gpu", "h100-80gb", "--format", "json",
                   "--runs-dir", str(Path(tmp) / "runs"), *(["--no-levers"] if args.no_levers else []), "--",
                   sys.executable, str(script)]
        started = time.monotonic()
        done = subprocess.run(command, capture_output=True, text=True, env=dict(os.environ, OMP_NUM_THREADS="1"))
        wall = time.monotonic() - started
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    rss = usage.ru_maxrss * 1024  # KiB on Linux
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if not lines:
        print(done.stderr[-3000:], file=sys.stderr)
        return 2
    report = json.loads(lines[-1])
    gib = float(1 << 30)
    print(f"7B decoder ({report['parameter_count'] / 1e9:.2f}B parameters, bf16, AdamW, batch 1 x 2048): "
          f"peak {report['peak_bytes'] / gib:.1f} GiB on {report['gpu']['name']}, fits: {report['fits']}, "
          f"largest batch {report['max_batch']}, {report['flops'] / 1e12:.1f} TFLOP per step")
    print("  by category (GiB): " + ", ".join(f"{k} {v / gib:.1f}" for k, v in report["by_category"].items()))
    for lever in report["levers"]:
        if lever.get("peak_bytes") is not None:
            print(f"  lever {lever['name']}: {lever['peak_bytes'] / gib:.1f} GiB")
    print(f"wall {wall:.1f} s (goal < {GOAL_SECONDS:.0f} s: {wall / GOAL_SECONDS:.2f} of it), "
          f"CPU {usage.ru_utime + usage.ru_stime:.1f} s, peak RSS {rss / gib:.2f} GiB "
          f"(goal < 4 GiB: {rss / GOAL_RSS:.2f} of it), fake steps measured in {report['measure_seconds']:.1f} s")
    return 0 if wall < GOAL_SECONDS and rss < GOAL_RSS else 1


if __name__ == "__main__":
    sys.exit(main())
