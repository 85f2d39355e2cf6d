"""Overhead of `traindoctor watch -- torchrun`: the paired measurement of bench_watch_overhead.py, on 2 ranks.

A real 2-rank DDP job (gloo, CPU, one thread per rank) runs the MLP training loop of
bench_watch_overhead.py; every rank installs what `watch` installs on a rank of a torchrun job
(hooks.py and rank_hooks.py, loaded the way the bootstrap loads them, `watch`'s default settings:
parameter checksums every 10 steps, heartbeat, forward timing). Pairs of neighbouring steps, one with
the monitor and one without, in a random order that both ranks draw from the same seed (the
gradient all-reduce couples the ranks: a step is monitored on every rank or on none). Pairs with an
epoch's first step are left out. Reports each rank's mean slowdown and extra µs per step, in wall
and process CPU time. Goal: at most 5 %.

    .venv/bin/python bench/bench_dist_overhead.py [--pairs 1500]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_watch_overhead import _environment, slowdowns  # noqa: E402  (the same allocator settings and rows)

PAIRED_DDP = textwrap.dedent(
    """
    import json, os, random, statistics, sys, tempfile, time
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel
    from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = DistributedDataParallel(torch.nn.Sequential(
        torch.nn.Linear(256, 512), torch.nn.ReLU(), torch.nn.Linear(512, 512), torch.nn.ReLU(),
        torch.nn.Linear(512, 10)))
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    data = TensorDataset(torch.randn(8192, 256), torch.randint(0, 10, (8192,)))
    loader = DataLoader(data, batch_size=64, sampler=DistributedSampler(data), drop_last=True)
    from traindoctor.monitor import bootstrap
    hooks, rank_hooks = bootstrap._load_hooks(), bootstrap._load_hooks(bootstrap.monitor_file("rank_hooks"))
    pairs = int(sys.argv[1])

    def batches():
        while True:
            for index, batch in enumerate(loader):
                yield index == 0, batch

    feed = batches()

    def step():
        wall, cpu = time.perf_counter(), time.process_time()
        first, (inputs, targets) = next(feed)
        optimizer.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(inputs), targets)
        loss.backward()
        optimizer.step()
        return time.perf_counter() - wall, time.process_time() - cpu, first

    for _ in range(100):
        step()
    config = {"run_dir": os.path.join(tempfile.mkdtemp(), f"rank-{rank}"), "stop_on": None, "per_layer": False,
              "distributed": {"checksum_every": 10, "stack_signal": "SIGUSR2"}}
    monitor = hooks.Monitor(config)
    monitor.install()
    extension = rank_hooks.install(monitor, config)
    for _ in range(150):
        step()
    originals = [(owner, name, original) for owner, name, original, _ in monitor._patched]
    monitor._remove_hooks()
    on, off = [], []
    order = random.Random(0)  # the same draws on every rank
    while len(on) < pairs:
        pair = {}
        for monitored in order.sample((True, False), 2):
            if monitored:
                monitor.install()
                extension.patch()
                pair[True] = step()
                monitor._remove_hooks()
            else:
                for owner, name, original in originals:
                    setattr(owner, name, original)
                pair[False] = step()
        if not pair[True][2] and not pair[False][2]:
            on.append(pair[True])
            off.append(pair[False])
    monitor.close(0)
    result = {}
    for key, position in (("wall", 0), ("cpu", 1)):
        with_monitor = [times[position] for times in on]
        without = [times[position] for times in off]
        differences = [a - b for a, b in zip(with_monitor, without)]
        result[key] = {"with_ms": 1e3 * statistics.fmean(with_monitor), "without_ms": 1e3 * statistics.fmean(without),
                       "extra_us": 1e6 * statistics.fmean(differences),
                       "extra_stderr_us": 1e6 * statistics.stdev(differences) / len(differences) ** 0.5}
    with open(f"result-{rank}.json", "w") as handle:  # a file each: the ranks' stdout lines interleave
        json.dump(result, handle)
    dist.destroy_process_group()
    """
)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pairs", type=int, default=1500, help="step pairs per rank")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        script = Path(folder) / "paired_ddp.py"
        script.write_text(PAIRED_DDP)
        done = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2",
                               str(script), str(args.pairs)], capture_output=True, text=True, timeout=3600,
                              cwd=folder, env=_environment())
        results = {rank: Path(folder) / f"result-{rank}.json" for rank in (0, 1)}
        # Each rank writes its file before it leaves; an abort at interpreter exit afterwards
        # (gloo's "terminate called without an active exception", seen about 1 run in 12) does not
        # change what was measured, and is reported beside it.
        if not all(path.is_file() for path in results.values()):
            raise SystemExit(f"no measurement (exit {done.returncode}): {done.stderr[-800:]}")
        output: dict[str, object] = {"pairs": args.pairs, "ranks": 2}
        if done.returncode != 0:
            output["exit_code"] = done.returncode
        for rank, path in results.items():
            output[f"rank {rank}"] = slowdowns(json.loads(path.read_text()))
    print(json.dumps(output, indent=2, ensure_ascii=False))


if __name__ == "__main__":
    main()
