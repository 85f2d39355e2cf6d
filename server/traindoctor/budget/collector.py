"""Measure training steps of the user's script with fake tensors (loaded by the monitor's bootstrap).

Runs inside the user's process (no traindoctor imports: sandbox.py next to this file is loaded by path).
Step 1 is the warm-up (optimizers allocate their state lazily at their first step); every further step
is measured once, under a plan written by the CLI: the script as it is ("base"), the batch scaled up
(to fit a line to the batch), then one step per lever (bf16 autocast, activation checkpointing of the
largest repeated blocks, a foreach-free optimizer, `zero_grad(set_to_none=True)`). After the plan the
run stops (`StopRun`) and `budget.json` holds what was measured; the CLI turns it into the report.

Memory is counted by torch's MemTracker (storages by category: parameters, buffers, gradients,
activations, temporaries, optimizer state; per module and phase), FLOPs by FlopCounterMode, the
time by a roofline over the same ops (each op bound by the GPU's math rate or its bandwidth).
"""

from __future__ import annotations

import contextlib
import copy
import functools
import json
import os
import sys
import time
import types
import weakref
from typing import Any

import torch
import torch.distributed._tools.mem_tracker as mem_tracker_module
from torch.distributed._tools.mem_tracker import MemTracker
from torch.utils.flop_counter import FlopCounterMode, flop_registry


def _load_sandbox() -> Any:
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "sandbox.py")
    with open(path, encoding="utf-8") as handle:
        code = compile(handle.read(), "<frozen traindoctor.budget.sandbox>", "exec")
    module = types.ModuleType("traindoctor_budget_sandbox")
    module.__file__ = path
    sys.modules[module.__name__] = module
    exec(code, module.__dict__)
    return module


sandbox = _load_sandbox()


def _allocated(winfo: Any) -> int:
    """Bytes the CUDA caching allocator hands out for a storage: rounded up to 512 (what
    torch.cuda.memory_allocated counts). MemTracker rounds only storages on a CUDA device; ours are on the
    fake CPU device that stands for it."""
    return -(-winfo.size * winfo.element_size // 512) * 512


mem_tracker_module._WeakRefInfo._calculate_mem_consumed = _allocated

# MemTracker's category names -> the report's.
CATEGORIES = {"Parameter": "parameters", "Buffer": "buffers", "Gradient": "gradients", "Activation": "activations",
              "Temp": "temporaries", "Optstate": "optimizer_state", "Other": "activations"}
CATEGORY_ORDER = ("parameters", "buffers", "gradients", "optimizer_state", "activations", "temporaries")
PHASES = ("forward", "backward", "optimizer")


class StopRun(BaseException):
    """Raised after the last planned step: the bootstrap ends the run with exit code 0."""


def _categories(snapshot: dict[Any, dict[str, int]]) -> dict[str, int]:
    out = dict.fromkeys(CATEGORY_ORDER, 0)
    for device_snapshot in snapshot.values():
        for key, value in device_snapshot.items():
            name = CATEGORIES.get(getattr(key, "value", key))
            if name:
                out[name] += int(value)
    return out


def _tensor_bytes(value: Any) -> int:
    total = 0
    for item in torch.utils._pytree.tree_leaves(value):
        if isinstance(item, torch.Tensor):
            total += item.numel() * item.element_size()
    return total


class StepTracker(MemTracker):
    """MemTracker that also keeps, per op: the phase, the memory by category, and a roofline time."""

    def __init__(self, monitor: "Monitor") -> None:
        super().__init__()
        self.monitor = monitor
        self.phase = "forward"
        self.timeline: list[tuple[int, tuple[int, ...]]] | None = None
        self.roofline: dict[str, float] | None = None
        self.peak_phase = "forward"
        self.peak_module = ""
        self.phase_peaks: dict[str, int] = {}

    def reset_peak(self) -> None:
        current = self.get_tracker_snapshot()
        self._peak_mem = {dev: snap.get("Total", 0) for dev, snap in current.items()}
        self._peak_mem_snap = copy.deepcopy(current)
        self.peak_phase, self.peak_module, self.phase_peaks = self.phase, "", {}

    def _update_peak_stats(self, peak_state: Any) -> None:
        # The global peak only: MemTracker also keeps every active module's local peak, walking all
        # modules at every op (O(modules) per op: most of the time of a 7B step). The report does not use
        # those local peaks (by_module comes from each module's pre- and post-forward snapshots).
        for dev, dev_snap in self._curr_mem_snap.items():
            if self._peak_mem.get(dev, 0) < dev_snap["Total"]:
                self._peak_mem[dev] = dev_snap["Total"]
                self._peak_mem_snap[dev] = dict(dev_snap)

    def total(self) -> int:
        return sum(snap.get("Total", 0) for snap in self._curr_mem_snap.values())

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
        before = sum(self._peak_mem.values())
        out = super().__torch_dispatch__(func, types, args, kwargs)
        total = self.total()
        phase = self.phase
        if total > self.phase_peaks.get(phase, 0):
            self.phase_peaks[phase] = total
        if sum(self._peak_mem.values()) > before:
            self.peak_phase = phase
            active = [p for p in self._mod_tracker.parents if p != "Global"]
            self.peak_module = max(active, key=lambda name: name.count("."), default="")
        if self.timeline is not None:
            cats = _categories(self._curr_mem_snap)
            self.timeline.append((PHASES.index(phase), tuple(cats[c] for c in CATEGORY_ORDER)))
        if self.roofline is not None:
            self._roofline(func, args, kwargs or {}, out)
        return out

    def _roofline(self, func: Any, args: Any, kwargs: Any, out: Any) -> None:
        """Time of one op on the target GPU: the longer of its math (FLOPs over the rate for its dtype)
        and its memory traffic (inputs and outputs over the bandwidth)."""
        gpu = self.monitor.gpu
        packet = func.overloadpacket
        flops = 0
        if packet in flop_registry:
            try:
                flops = flop_registry[packet](*args, **kwargs, out_val=out)
            except Exception:  # noqa: BLE001 - a formula that does not take this overload's arguments
                flops = 0
        moved = _tensor_bytes(args) + _tensor_bytes(out)
        dtype = next((t.dtype for t in torch.utils._pytree.tree_leaves(args) if isinstance(t, torch.Tensor)
                      and t.is_floating_point()), torch.float32)
        rate = gpu["tflops"].get({torch.bfloat16: "bf16", torch.float16: "fp16"}.get(dtype, "fp32")) or \
            gpu["tflops"]["fp32"]
        math_s = flops / (rate * 1e12) if flops else 0.0
        memory_s = moved / (gpu["bandwidth_gbs"] * 1e9)
        self.roofline["seconds"] += max(math_s, memory_s)
        self.roofline["math_bound_s"] += math_s if math_s >= memory_s else 0.0
        self.roofline["bytes_moved"] += moved


class Monitor:
    """The collector the bootstrap installs: drives the plan over the script's optimizer steps."""

    def __init__(self, config: dict[str, Any]) -> None:
        self.config = config
        self.run_dir = config["run_dir"]
        os.makedirs(self.run_dir, exist_ok=True)
        self.gpu = config["gpu"]
        self.plan: list[dict[str, Any]] = list(config.get("plan") or [{"name": "base"}])
        self.notes = sandbox.Notes()
        self.world = sandbox.FakeWorld(self.gpu["name"], int(self.gpu["memory_bytes"]),
                                       int(config.get("world_size") or 1), self.notes)
        self.started = time.monotonic()
        self.tracker: StepTracker | None = None
        self.flops: FlopCounterMode | None = None
        self.optimizers: list[Any] = []  # weak references, in creation order
        self.driver: Any = None  # the optimizer whose steps delimit training steps (the first to step)
        self.roots: list[Any] = []  # weak references to the modules called at depth 0
        self.depth = 0
        self.step_index = 0
        self.current: dict[str, Any] | None = None  # the plan entry being measured
        self.results: list[dict[str, Any]] = []
        self.at_backward: dict[str, int] | None = None
        self.zero_grads: list[bool] = []  # set_to_none of each zero_grad call in the base step
        self.autocast_seen = False
        self.batch_scale = 1
        self.batch_size: int | None = None  # of the first DataLoader batch
        self.lever_undo: list[Any] = []
        self.closed = False
        self.error: str | None = None
        self.handles: list[Any] = []
        self.gradient_buckets: list[Any] = []  # DDP's, counted with the gradients

    # --- installation -----------------------------------------------------------------

    def install(self) -> None:
        self._progress("building the model and one batch with fake tensors (no memory is used)")
        self.world.enter()
        patches = self.world.patches
        monitor = self

        backward = torch.autograd.backward

        @functools.wraps(backward)
        def tracked_backward(*args: Any, **kwargs: Any) -> Any:
            monitor._before_backward()
            try:
                return backward(*args, **kwargs)
            finally:
                if monitor.tracker is not None:
                    monitor.tracker.phase = "backward"

        patches.set(torch.autograd, "backward", tracked_backward)

        optimizer_init = torch.optim.Optimizer.__init__

        @functools.wraps(optimizer_init)
        def init(optimizer: Any, *args: Any, **kwargs: Any) -> None:
            optimizer_init(optimizer, *args, **kwargs)
            if "step" not in vars(optimizer):
                monitor._wrap_step(optimizer)

        patches.set(torch.optim.Optimizer, "__init__", init)
        for owner in (torch.optim.Optimizer, torch.nn.Module):
            patches.set(owner, "zero_grad", self._zero_grad(owner.zero_grad))
        self._patch_loader()
        self._patch_distributed()
        self.handles.append(torch.nn.modules.module.register_module_forward_pre_hook(self._pre_forward))
        self.handles.append(torch.nn.modules.module.register_module_forward_hook(self._post_forward))
        autocast_enter = torch.amp.autocast_mode.autocast.__enter__

        def enter(ctx: Any) -> Any:
            if getattr(ctx, "_enabled", True) and monitor.current is not None:
                monitor.autocast_seen = True
            return autocast_enter(ctx)

        patches.set(torch.amp.autocast_mode.autocast, "__enter__", enter)

    def _wrap_step(self, optimizer: Any) -> None:
        original = optimizer.step
        monitor = self

        @functools.wraps(original)
        def step(*args: Any, **kwargs: Any) -> Any:
            if monitor.tracker is not None:
                monitor.tracker.phase = "optimizer"
            result = original(*args, **kwargs)
            monitor._after_step(optimizer)
            return result

        optimizer.step = step
        self.optimizers.append(weakref.ref(optimizer))

    def _zero_grad(self, original: Any) -> Any:
        monitor = self

        @functools.wraps(original)
        def zero_grad(owner: Any, set_to_none: bool = True) -> Any:
            if monitor.current is not None and monitor.current.get("lever") == "set_to_none":
                set_to_none = True
            if monitor.current is not None and monitor.current["name"] == "base":
                monitor.zero_grads.append(bool(set_to_none))
            return original(owner, set_to_none)

        return zero_grad

    def _pre_forward(self, module: Any, args: Any) -> None:
        if self.depth == 0 and not any(r() is module for r in self.roots):
            self.roots.append(weakref.ref(module))
        self.depth += 1

    def _post_forward(self, module: Any, args: Any, output: Any) -> None:
        self.depth = max(0, self.depth - 1)

    def _patch_loader(self) -> None:
        from torch.utils.data import DataLoader

        original = DataLoader.__iter__
        monitor = self
        limit = len(self.plan) + 3

        def iterate(loader: Any) -> Any:
            if loader.num_workers:
                monitor.notes.add("dataloader workers", f"num_workers={loader.num_workers}",
                                  "the DataLoader's worker processes were not started (one batch was loaded in "
                                  "the main process); their host memory and pinned buffers are not counted")
                loader.num_workers = 0
            if getattr(loader, "pin_memory", False):
                loader.pin_memory = False
            cached = getattr(loader, "_traindoctor_batch", None)
            if cached is None:
                cached = next(iter(original(loader)))
                object.__setattr__(loader, "_traindoctor_batch", cached)
                if monitor.batch_size is None:
                    monitor.batch_size = loader.batch_size or _leading_size(cached)
            for _ in range(limit):
                yield _scaled(cached, monitor.batch_size, monitor.batch_scale)

        self.world.patches.set(DataLoader, "__iter__", iterate)

    def _patch_distributed(self) -> None:
        import torch.distributed as dist

        if not dist.is_available():
            return
        world_size = int(self.config.get("world_size") or 1)
        original = dist.init_process_group
        monitor = self

        @functools.wraps(original)
        def init_process_group(*args: Any, **kwargs: Any) -> None:
            from torch.testing._internal.distributed.fake_pg import FakeStore

            if dist.is_initialized():
                return
            monitor.notes.add("process group", "init_process_group",
                              f"the script's process group was replaced by torch's fake one (rank 0 of "
                              f"{world_size}): collectives move no data and their time is not estimated")
            original(backend="fake", store=FakeStore(), rank=0, world_size=world_size)

        self.world.patches.set(dist, "init_process_group", init_process_group)
        for name, value in (("RANK", "0"), ("LOCAL_RANK", "0"), ("WORLD_SIZE", str(world_size)),
                            ("MASTER_ADDR", "127.0.0.1"), ("MASTER_PORT", "29500")):
            os.environ.setdefault(name, value)
        from torch.distributed.device_mesh import DeviceMesh
        from torch.nn.parallel import DistributedDataParallel
        from torch.utils._python_dispatch import _disable_current_modes

        def ddp(self_: Any, module: Any, *args: Any, gradient_as_bucket_view: bool = False, **kwargs: Any) -> None:
            # DDP's C++ reducer reads parameter data (shape checks, the first broadcast), which fake tensors
            # do not have. What it costs per rank is its gradient buckets: one flat copy of the gradients
            # (none with gradient_as_bucket_view=True, where the gradients are views into the buckets).
            torch.nn.Module.__init__(self_)
            self_.module = module
            self_.gradient_as_bucket_view = gradient_as_bucket_view
            if not gradient_as_bucket_view:
                for dtype in {p.dtype for p in module.parameters() if p.requires_grad}:
                    count = sum(p.numel() for p in module.parameters() if p.requires_grad and p.dtype == dtype)
                    monitor.gradient_buckets.append(torch.empty(count, dtype=dtype))
            monitor.notes.add("DDP", "DistributedDataParallel", "DDP was modelled, not run: its gradient buckets "
                              "are counted with the gradients; its all-reduce moves no data and its time is not "
                              "estimated")

        self.world.patches.set(DistributedDataParallel, "__init__", ddp)
        self.world.patches.set(DistributedDataParallel, "forward",
                               lambda self_, *args, **kwargs: self_.module(*args, **kwargs))
        self.world.patches.set(DistributedDataParallel, "no_sync", lambda self_: contextlib.nullcontext())
        mesh_init = DeviceMesh.__init__

        @functools.wraps(mesh_init)
        def mesh(self_: Any, *args: Any, **kwargs: Any) -> None:
            with _disable_current_modes():  # the mesh is host-side bookkeeping: real tensors
                mesh_init(self_, *args, **kwargs)

        self.world.patches.set(DeviceMesh, "__init__", mesh)
        import importlib

        import torch.distributed.device_mesh as device_mesh

        init_mesh = device_mesh.init_device_mesh

        @functools.wraps(init_mesh)
        def init_device_mesh(*args: Any, **kwargs: Any) -> Any:
            with _disable_current_modes():
                return init_mesh(*args, **kwargs)

        for name in ("torch.distributed.device_mesh", "torch.distributed.tensor", "torch.distributed",
                     "torch.distributed.fsdp._fully_shard._fsdp_init"):
            try:
                owner = importlib.import_module(name)
            except ImportError:
                continue
            if getattr(owner, "init_device_mesh", None) is init_mesh:  # imported by name there
                self.world.patches.set(owner, "init_device_mesh", init_device_mesh)

    # --- the plan ---------------------------------------------------------------------

    def _before_backward(self) -> None:
        if self.tracker is None and self.driver is None:
            # Step 1's backward: from here on every storage is tracked (step 1 is the warm-up).
            self._start_tracker()
        if self.tracker is not None:
            if self.at_backward is None and self.current is not None:
                self.at_backward = _categories(self.tracker.get_tracker_snapshot())
            self.tracker.phase = "backward"
        if self.current is not None and self.current.get("lever") == "bf16_autocast":
            self._undo_levers(keep_checkpoint=True)

    def _start_tracker(self) -> None:
        self.tracker = StepTracker(self)
        external = [r() for r in self.roots] + [r() for r in self.optimizers]
        self.tracker.track_external(*[x for x in external if x is not None])
        for bucket in self.gradient_buckets:
            self.tracker._update_and_maybe_create_winfos(bucket, mem_tracker_module._MemRefType.GRAD)
        self.tracker.__enter__()

    def _after_step(self, optimizer: Any) -> None:
        if self.driver is None:
            self.driver = weakref.ref(optimizer)
        if self.driver() is not optimizer:
            return
        self.step_index += 1
        if self.tracker is None:  # no backward seen (a step without one): track from now on
            self._start_tracker()
        if self.step_index == 1:
            self._progress("step 1 (warm-up: optimizers allocate their state) done")
        else:
            self._finish()
        if not self.plan:
            self._write()
            raise StopRun()
        self._begin(self.plan.pop(0))

    def _begin(self, entry: dict[str, Any]) -> None:
        tracker = self.tracker
        if entry.get("batch_scale") and self.batch_size is None:
            self.results.append({"name": entry["name"], "skipped": "the batch does not come from a DataLoader, "
                                 "so it cannot be scaled"})
            if self.plan:
                return self._begin(self.plan.pop(0))
        if entry.get("lever"):
            reason = self._apply_lever(entry)
            if reason:
                self.results.append({"name": entry["name"], "lever": entry["lever"], "skipped": reason})
                if not self.plan:
                    self._write()
                    raise StopRun()
                return self._begin(self.plan.pop(0))
        self.current = entry
        self.batch_scale = int(entry.get("batch_scale") or 1)
        self.at_backward = None
        tracker.phase = "forward"
        tracker.reset_mod_stats()
        tracker.reset_peak()
        self.step_started = time.monotonic()
        detail = f" (batch x{self.batch_scale})" if self.batch_scale > 1 else ""
        self._progress(f"measuring step {self.step_index + 1}: {entry['name']}{detail}")
        if entry["name"] == "base":
            tracker.timeline = []
            tracker.roofline = {"seconds": 0.0, "math_bound_s": 0.0, "bytes_moved": 0}
            self.flops = FlopCounterMode(display=False)
            self.flops.__enter__()

    def _finish(self) -> None:
        entry, tracker = self.current, self.tracker
        if entry is None or tracker is None:
            return
        if self.flops is not None:
            self.flops.__exit__(None, None, None)
        self._undo_levers()
        peak = _categories(tracker.get_tracker_snapshot("peak"))
        end = _categories(tracker.get_tracker_snapshot())
        result: dict[str, Any] = {
            "name": entry["name"], "lever": entry.get("lever"), "batch_scale": self.batch_scale,
            "peak_bytes": sum(peak.values()), "peak": peak, "end": end, "at_backward": self.at_backward,
            "peak_phase": tracker.peak_phase, "peak_module": tracker.peak_module,
            "phase_peaks": dict(tracker.phase_peaks), "seconds": round(time.monotonic() - self.step_started, 3),
        }
        if entry.get("checkpointed"):
            result["checkpointed"] = entry["checkpointed"]
        if entry["name"] == "base":
            result.update(self._base_details())
        self.results.append(result)
        tracker.timeline = None
        tracker.roofline = None
        self.flops = None
        self.current = None

    def _base_details(self) -> dict[str, Any]:
        tracker = self.tracker
        modules = []
        for stats in tracker.memory_tracking.values():
            snapshots = {getattr(k, "value", k): v for k, v in stats.snapshots.items()}
            pre, post = snapshots.get("Pre-Forward", []), snapshots.get("Post-Forward", [])
            retained = _total(post[0]) - _total(pre[0]) if pre and post else 0
            modules.append({"name": stats.mod_fqn, "parameters": int(getattr(stats, "parameter_mem", 0)),
                            "buffers": int(getattr(stats, "buffer_mem", 0)), "activations": max(0, int(retained)),
                            "calls": len(pre), "class": ""})
        classes = {}
        for ref in self.roots:
            root = ref()
            if root is None:
                continue
            prefix = type(root).__name__
            for name, module in root.named_modules():
                classes[f"{prefix}.{name}" if name else prefix] = type(module).__name__
        for module in modules:
            module["class"] = classes.get(module["name"], "")
        flops = self.flops.get_total_flops() if self.flops is not None else 0
        by_module_flops = {}
        if self.flops is not None:
            for name, counts in self.flops.get_flop_counts().items():
                by_module_flops[name] = int(sum(counts.values()))
        timeline = tracker.timeline or []
        optimizers = []
        for ref in self.optimizers:
            opt = ref()
            if opt is None:
                continue
            optimizers.append({"class": type(opt).__name__,
                               "foreach": [g.get("foreach") for g in opt.param_groups][:1],
                               "state_bytes": sum(v.numel() * v.element_size() for s in opt.state.values()
                                                  for v in s.values() if isinstance(v, torch.Tensor))})
        params = [p for ref in self.roots if ref() is not None for p in ref().parameters()]
        dtypes = sorted({str(p.dtype).replace("torch.", "") for p in params})
        return {"modules": modules, "flops": int(flops), "flops_by_module": by_module_flops,
                "roofline": dict(tracker.roofline or {}), "timeline": _downsample(timeline, 1500),
                "timeline_ops": len(timeline), "optimizers": optimizers, "zero_grad_set_to_none": self.zero_grads,
                "autocast": self.autocast_seen, "parameter_dtypes": dtypes,
                "parameter_count": sum(p.numel() for p in params), "batch_size": self.batch_size,
                "roots": [type(r()).__name__ for r in self.roots if r() is not None]}

    # --- levers -----------------------------------------------------------------------

    def _apply_lever(self, entry: dict[str, Any]) -> str | None:
        """Set up one lever for the next step; a reason when it does not apply."""
        lever = entry["lever"]
        base = next((r for r in self.results if r["name"] == "base"), None)
        if base is None:
            return "the base step was not measured"
        if lever == "bf16_autocast":
            if base.get("autocast"):
                return "the script already uses autocast"
            if "bfloat16" in base["parameter_dtypes"] or "float16" in base["parameter_dtypes"]:
                return "the parameters are already in 16 bits"
            context = torch.autocast("cpu", dtype=torch.bfloat16)
            context.__enter__()
            self.lever_undo.append(("autocast", context))
            return None
        if lever == "checkpoint":
            blocks = _largest_blocks(base["modules"], self.roots)
            if not blocks:
                return "no repeated blocks (a ModuleList or Sequential of the same module) were found"
            from torch.utils.checkpoint import checkpoint

            for name, module in blocks:
                forward = module.forward

                def wrapped(*args: Any, _forward: Any = forward, **kwargs: Any) -> Any:
                    return checkpoint(_forward, *args, use_reentrant=False, **kwargs)

                module.forward = wrapped
                self.lever_undo.append(("checkpoint", module))
            entry["checkpointed"] = [name for name, _ in blocks]
            return None
        if lever == "foreach_off":
            phases = base.get("phase_peaks") or {}
            if phases.get("optimizer", 0) < base["peak_bytes"]:
                return (f"the peak is in the {base['peak_phase']} phase, and foreach temporaries exist only "
                        f"during the optimizer step: the lever cannot lower it")
            changed = False
            for ref in self.optimizers:
                opt = ref()
                for group in opt.param_groups if opt is not None else ():
                    if group.get("foreach") is False and not group.get("fused"):
                        continue
                    self.lever_undo.append(("group", group, {k: group.get(k) for k in ("foreach", "fused")}))
                    group["foreach"] = False
                    if "fused" in group:
                        group["fused"] = False
                    changed = True
            return None if changed else "the optimizer already runs without foreach"
        if lever == "set_to_none":
            calls = base.get("zero_grad_set_to_none") or []
            if not calls:
                return "the script does not call zero_grad() in its step"
            if all(calls):
                return "zero_grad() already sets gradients to None"
            return None
        return f"unknown lever {lever}"

    def _undo_levers(self, keep_checkpoint: bool = False) -> None:
        kept = []
        for item in reversed(self.lever_undo):
            if item[0] == "autocast":
                item[1].__exit__(None, None, None)
            elif item[0] == "checkpoint":
                if keep_checkpoint:
                    kept.append(item)
                    continue
                vars(item[1]).pop("forward", None)
            elif item[0] == "group":
                item[1].update(item[2])
        self.lever_undo = list(reversed(kept))

    # --- output -----------------------------------------------------------------------

    def _progress(self, text: str) -> None:
        elapsed = time.monotonic() - self.started
        print(f"traindoctor budget [{elapsed:5.1f}s]: {text}", file=sys.stderr, flush=True)

    def _write(self) -> None:
        import torch.distributed as dist

        payload = {"results": self.results, "unaccounted": self.notes.to_json(), "steps": self.step_index,
                   "error": self.error, "seconds": round(time.monotonic() - self.started, 3),
                   "world_size": dist.get_world_size() if dist.is_available() and dist.is_initialized() else 1,
                   "distributed": _distributed_kind(self.roots)}
        path = os.path.join(self.run_dir, "budget.json")
        with open(path + ".tmp", "w", encoding="utf-8") as handle:
            json.dump(payload, handle, default=str)
        os.replace(path + ".tmp", path)
        self.closed = True

    def close(self, exit_code: Any = None, error: str | None = None, remove_hooks: bool = True) -> None:
        if self.closed:
            return
        if error and not self.error:
            self.error = error
        if self.current is not None:
            self.results.append({"name": self.current["name"], "skipped": "the script ended or failed "
                                 "before this step finished"})
            self.current = None
        if self.flops is not None and self.flops.mode is not None:
            try:
                self.flops.__exit__(None, None, None)
            except Exception:  # noqa: BLE001 - the mode stack the failure left
                pass
        self._write()
        for handle in self.handles:
            handle.remove()
        if self.tracker is not None:
            try:
                self.tracker.__exit__(None, None, None)
            except Exception:  # noqa: BLE001
                pass
        self.world.exit()


def _total(snapshot: dict[Any, dict[str, int]]) -> int:
    return sum(device.get("Total", 0) for device in snapshot.values())


def _leading_size(batch: Any) -> int | None:
    for item in torch.utils._pytree.tree_leaves(batch):
        if isinstance(item, torch.Tensor) and item.dim() > 0:
            return int(item.shape[0])
    return None


def _scaled(batch: Any, size: int | None, factor: int) -> Any:
    """The batch with every tensor whose first dimension is the batch size repeated `factor` times; a new
    tensor every step (as a real loader gives), so the step's tracker counts it."""

    def scale(item: Any) -> Any:
        if not isinstance(item, torch.Tensor):
            return item
        if factor > 1 and size and item.dim() > 0 and item.shape[0] == size:
            return torch.cat([item] * factor)
        return item.clone()

    return torch.utils._pytree.tree_map(scale, batch)


def _largest_blocks(modules: list[dict[str, Any]], roots: list[Any]) -> list[tuple[str, Any]]:
    """The repeated blocks with the most activations: the children of one container (ModuleList or
    Sequential) that share a class, the group with the largest sum of activations."""
    by_name = {m["name"]: m for m in modules}
    best: tuple[int, list[tuple[str, Any]]] = (0, [])
    for ref in roots:
        root = ref()
        if root is None:
            continue
        prefix = type(root).__name__
        for name, container in root.named_modules():
            if not isinstance(container, (torch.nn.ModuleList, torch.nn.Sequential)):
                continue
            groups: dict[type, list[tuple[str, Any]]] = {}
            for child_name, child in container.named_children():
                full = f"{prefix}.{name}.{child_name}" if name else f"{prefix}.{child_name}"
                if any(True for _ in child.children()):  # a block, not a single layer
                    groups.setdefault(type(child), []).append((full, child))
            for members in groups.values():
                if len(members) < 2:
                    continue
                size = sum(by_name.get(full, {}).get("activations", 0) for full, _ in members)
                if size > best[0]:
                    best = (size, members)
    return best[1]


def _downsample(timeline: list[tuple[int, tuple[int, ...]]], points: int) -> list[list[int]]:
    """At most `points` samples; each keeps the op with the largest total in its stretch."""
    if len(timeline) <= points:
        return [[phase, *values] for phase, values in timeline]
    out = []
    stride = len(timeline) / points
    for index in range(points):
        chunk = timeline[int(index * stride):int((index + 1) * stride)] or timeline[-1:]
        phase, values = max(chunk, key=lambda item: sum(item[1]))
        out.append([phase, *values])
    return out


def _distributed_kind(roots: list[Any]) -> str | None:
    for ref in roots:
        root = ref()
        if root is None:
            continue
        if type(root).__name__ == "DistributedDataParallel":
            return "ddp"
        if "FSDP" in type(root).__name__ or any("FSDP" in type(m).__name__ for m in root.modules()):
            return "fsdp2"
    return None
