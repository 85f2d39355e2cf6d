"""What it costs to see retained autograd graphs, per training step, three ways (issue 28, point 7).

- saved-hooks: `torch.autograd.graph.saved_tensors_hooks` installed for the whole run, counting
  live saved tensors (pack wraps each in an object whose finaliser decrements the count): one
  Python call per saved tensor in forward and one per unpack in backward, on every step.
- walk-loss: count the nodes of the backpropagated loss's graph (`grad_fn.next_functions`) every
  step: a Python visit per node of the model's graph; and it sees only the loss's own graph, not
  a sum kept beside it (`total += val_loss`), so it cannot see the usual leak at all.
- frame-tags (what `watch` does, hooks.retained_graphs): the variables of the frame that steps the
  optimizer; each tensor with history (the backpropagated loss excepted) is searched for an
  earlier sample's tag, at most 64 nodes, and tagged. Measured here at every step (watch samples
  every step for the first 100 steps, then every 50 ms).

Two models on the CPU, one thread: the MLP of bench_watch_overhead.py and a 4-layer transformer
encoder (a few hundred autograd nodes per step). Steps with and without the probe run as
pairs of neighbouring steps in random order: the extra time is the mean difference within a pair
(with its standard error); the two probes that run as one call are also timed alone (median).
Prints one JSON line per model.

    .venv/bin/python bench/bench_graph_probe.py [--pairs 200]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time

import torch

from traindoctor.monitor import bootstrap

hooks = bootstrap._load_hooks()


def models() -> dict[str, tuple[torch.nn.Module, torch.Tensor, torch.Tensor]]:
    torch.manual_seed(0)
    mlp = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.ReLU(), torch.nn.Linear(512, 512),
                              torch.nn.ReLU(), torch.nn.Linear(512, 10))
    layer = torch.nn.TransformerEncoderLayer(128, 4, 256, batch_first=True, dropout=0.0)
    encoder = torch.nn.Sequential(torch.nn.TransformerEncoder(layer, 4, enable_nested_tensor=False),
                                  torch.nn.Flatten(), torch.nn.Linear(128 * 16, 10))
    return {"mlp": (mlp, torch.randn(64, 256), torch.randint(0, 10, (64,))),
            "transformer-4": (encoder, torch.randn(16, 16, 128), torch.randint(0, 10, (16,)))}


class SavedCounter:
    live = 0

    def __init__(self, tensor: torch.Tensor) -> None:
        self.tensor = tensor
        SavedCounter.live += 1

    def __del__(self) -> None:
        SavedCounter.live -= 1


def pack(tensor: torch.Tensor) -> SavedCounter:
    return SavedCounter(tensor)


def unpack(saved: SavedCounter) -> torch.Tensor:
    return saved.tensor


def count_nodes(root) -> int:
    stack, seen = [root], {id(root)}
    while stack:
        node = stack.pop()
        for child, _ in node.next_functions:
            if child is not None and id(child) not in seen:
                seen.add(id(child))
                stack.append(child)
    return len(seen)


class Counting:
    """pack/unpack with a call count, to report how many Python calls the hooks add per step."""

    calls = 0

    @staticmethod
    def pack(tensor: torch.Tensor) -> SavedCounter:
        Counting.calls += 1
        return SavedCounter(tensor)

    @staticmethod
    def unpack(saved: SavedCounter) -> torch.Tensor:
        Counting.calls += 1
        return saved.tensor


def one_step(method: str, model, x, y, optimizer, step: int) -> tuple[float, float]:
    """The step's wall time and, for the two probes that run as one call, that call's own time."""
    context = torch.autograd.graph.saved_tensors_hooks(Counting.pack, Counting.unpack) \
        if method == "saved-hooks" else None
    began = time.perf_counter()
    probe = 0.0
    if context is not None:
        context.__enter__()
    optimizer.zero_grad()
    out = model(x)
    loss = torch.nn.functional.cross_entropy(out, y)
    loss.backward()
    if context is not None:
        context.__exit__(None, None, None)
    if method == "walk-loss":
        probe = time.perf_counter()
        count_nodes(loss.grad_fn)
        probe = time.perf_counter() - probe
    elif method == "frame-tags":
        probe = time.perf_counter()
        hooks.retained_graphs(sys._getframe(), step, id(loss))
        probe = time.perf_counter() - probe
    optimizer.step()
    return time.perf_counter() - began, probe


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pairs", type=int, default=200)
    args = parser.parse_args()
    torch.set_num_threads(1)
    rng = random.Random(0)
    for name, (model, x, y) in models().items():
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
        loss = torch.nn.functional.cross_entropy(model(x), y)
        nodes = count_nodes(loss.grad_fn)
        del loss
        step = 1
        for _ in range(10):  # warm-up
            one_step("none", model, x, y, optimizer, step)
            step += 1
        base_times: list[float] = []
        result: dict = {"model": name, "graph_nodes": nodes}
        for method in ("saved-hooks", "walk-loss", "frame-tags"):
            differences, probes = [], []
            Counting.calls = 0
            for _ in range(args.pairs):
                order = [method, "none"] if rng.random() < 0.5 else ["none", method]
                timed = {}
                for m in order:
                    timed[m] = one_step(m, model, x, y, optimizer, step)
                    step += 1
                differences.append(timed[method][0] - timed["none"][0])
                probes.append(timed[method][1])
                base_times.append(timed["none"][0])
            mean = statistics.fmean(differences)
            error = statistics.stdev(differences) / len(differences) ** 0.5
            entry = {"paired_extra_us": round(mean * 1e6, 1), "stderr_us": round(error * 1e6, 1)}
            if method == "saved-hooks":
                entry["python_calls_per_step"] = Counting.calls // args.pairs
            else:
                entry["call_us_median"] = round(statistics.median(probes) * 1e6, 1)
            result[method] = entry
        result["step_ms_median"] = round(statistics.median(base_times) * 1e3, 3)
        print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
