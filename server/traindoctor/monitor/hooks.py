"""The in-process collector: public torch hooks that write one JSONL record per optimizer step.

Loaded by `bootstrap.py` inside the user's process, so it imports nothing from
traindoctor (the user's interpreter may not have it installed) and only torch
and the standard library. What it installs:

- the global optimizer step pre/post hooks (`torch.optim.optimizer.register_optimizer_step_*_hook`);
- a wrapper on `torch.Tensor.backward` that keeps the (detached) loss, and one on
  `GradScaler.scale` so that a scaled loss is recorded unscaled;
- timing around `_BaseDataLoaderIter.__next__`, and `DataLoader.__iter__` to read
  the loader's live settings (and, for `overfit`, to repeat its first K batches).

Cost per step: the per-parameter gradient norms (`torch._foreach_norm`, the
largest part: a read of every gradient) and, on an accelerator, one host sync
(a single `.tolist()` of the loss, those norms and the update ratios of the
previous step). A step's record is completed at the next step's pre-hook (or at
exit), so the update ratios it carries cost no extra sync. Records are
serialised to JSON in batches, at each flush.
"""

from __future__ import annotations

import ctypes
import gc
import inspect
import json
import math
import os
import sys
import threading
import time
import warnings
import weakref
import zlib
from typing import Any

import torch
from torch.optim.optimizer import register_optimizer_step_post_hook, register_optimizer_step_pre_hook
from torch.utils.data import dataloader as _dl

_HERE = os.path.dirname(os.path.abspath(__file__))
_TORCH_DIR = os.path.dirname(os.path.abspath(torch.__file__))
_STDLIB_DIR = os.path.dirname(os.path.abspath(os.__file__))
_MAX_EVAL_NAMES = 5
# Every module's train/eval flag is read at the first steps, then every this many steps (a large
# model has hundreds of modules), and at every step while some module is in eval mode. The root
# modules are read at every step, so the usual mistake, `model.eval()` not followed by
# `model.train()`, is seen at its first step; a submodule alone put in eval, at the next scan.
_EVAL_SCAN_EVERY = 10
_MAX_WARNINGS = 50
_MAX_OTHER_OPTIMIZERS = 4  # optimizers checked besides the followed one (a GAN has two)
# Records are serialised and reach the disk at most this late (the live chart polls the file);
# a record with a non-finite loss or gradient, a stop and the end of the run are written at once.
_FLUSH_EVERY_S = 0.5
# The update ratio of a layer is estimated on at most this many of its weights, spread evenly:
# copying whole layers before every sampled step was the monitor's largest cost.
_RATIO_SAMPLE = 4096
_RATIO_CHUNK = 64  # consecutive values per sampled run (256 bytes in float32)
# Steps at whose start one small parameter's gradient is checked for what was left in it at the step
# before (gradients never reset between optimizer steps): a few suffice, the mistake is in every step.
_CARRY_CHECKS = 5
_FINGERPRINT_EVERY_STEP_UNTIL = 30  # the model's input is fingerprinted at each of the first steps ...
_FINGERPRINT_EVERY = 25  # ... then every this many (about 0.1-0.2 ms each on a loaded 2-core CPU)
_FINGERPRINT_VALUES = 64
_LABEL_CALLS = 50  # cross-entropy calls whose targets are counted


class StopRun(BaseException):
    """Ends the user's script quietly once the monitor has what it needs (overfit/repro steps)."""


class NonFiniteTraining(FloatingPointError):
    """Raised at the optimizer step with `--stop-on`, so a debugger stops in the training frame."""


def user_frame(depth: int = 2) -> Any:
    """The innermost caller frame in the user's own code (not torch, the stdlib, site-packages or us)."""
    frame = sys._getframe(depth)
    while frame is not None:
        path = frame.f_code.co_filename
        if not (path.startswith("<") or path.startswith((_TORCH_DIR, _STDLIB_DIR, _HERE))
                or "site-packages" in path or "dist-packages" in path):
            return frame
        frame = frame.f_back
    return None


def user_site(depth: int = 2) -> dict[str, Any] | None:
    """Where `user_frame` is: path, line and function."""
    frame = user_frame(depth + 1)
    if frame is None:
        return None
    return {"path": os.path.abspath(frame.f_code.co_filename), "line": frame.f_lineno, "function": frame.f_code.co_name}


# Process memory is a system call (/proc/<pid>/statm), which cost ~25 µs a step on a loaded
# machine, close to a tenth of the monitor: read at every step at first (short runs keep a full
# series for the memory-growth detector), then at most this often.
_RSS_EVERY_STEP_UNTIL = 100
_RSS_EVERY_S = 0.05
_PAGE_SIZE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
_statm: list[tuple[int, int]] = []  # (pid, fd): /proc/<pid>/statm, opened once per process


def _rss_bytes() -> int | None:
    """Resident memory, from a descriptor kept open (re-opening the file cost a tenth of the
    monitor's time per step)."""
    try:
        pid = os.getpid()
        if not _statm or _statm[0][0] != pid:  # first call, or a forked child
            _statm[:] = [(pid, os.open(f"/proc/{pid}/statm", os.O_RDONLY | getattr(os, "O_CLOEXEC", 0)))]
        return int(os.pread(_statm[0][1], 128, 0).split()[1]) * _PAGE_SIZE
    except (OSError, ValueError, IndexError, AttributeError):
        return None


class _MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in
                ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks",
                 "keepcost")]


def _glibc_mallinfo2() -> Any:
    """glibc's mallinfo2 (2.33+), or None: another C library, or an older glibc."""
    try:
        function = ctypes.CDLL(None).mallinfo2
    except (OSError, AttributeError):
        return None
    function.restype = _MallInfo2
    return function


_MALLINFO2 = _glibc_mallinfo2() if sys.platform.startswith("linux") else None


def _heap_free_bytes() -> int | None:
    """Free memory glibc's malloc keeps in its heaps (mallinfo2's fordblks): freed, still resident,
    counted in RSS. Memory a program frees in many small blocks (4 KB tensors replaced in a replay
    buffer) can stay there and raise RSS without any live object growing. Another allocator
    (jemalloc, tcmalloc preloaded) leaves glibc's heaps near empty: ~0 here, RSS unchanged."""
    if _MALLINFO2 is None:
        return None
    try:
        return int(_MALLINFO2().fordblks)
    except Exception:
        return None


# Retained graphs: at each sample (the steps RSS is read at), every tensor with autograd history in
# the frame that calls optimizer.step() is tagged (its grad_fn's `metadata`). A tensor whose graph
# holds a node tagged at an earlier sample keeps every step's graph since then alive (`total += loss`).
_GRAPH_TAG = "traindoctor_sample"
# Nodes visited per tensor looking for an earlier sample's tag: this many, plus 2 per step since
# the last sample (a chain adds at least one node per step on the path the search follows first).
_GRAPH_SEARCH_NODES = 32
_GRAPH_COUNT_NODES = 20000  # nodes counted per sample in a graph that holds earlier ones
_MAX_GRAPHS = 4  # tensors reported per record


def _distributed_world() -> bool:
    """This process is one rank of several (torch.distributed initialised with world size > 1)."""
    distributed = getattr(torch, "distributed", None)
    return bool(distributed is not None and distributed.is_available() and distributed.is_initialized()
                and distributed.get_world_size() > 1)


def retained_graphs(frame: Any, step: int, skip_id: int, since: int = 1,
                    lists: dict[str, tuple[int, int, int]] | None = None,
                    modules: list[tuple[str, torch.nn.Module]] = (), modules_since: int = 0) -> list[list[Any]]:
    """[name, first step held, nodes] for each tensor of `frame` (its locals; a module-level loop's
    globals) whose autograd graph still holds the graph of an earlier sample's step (`since` steps
    ago), and [name, first step held, length, "list"] for each list whose last item is a tensor
    with history, held since an earlier sample without shrinking (`lists` keeps, per name, the
    first step, the list's id and its length). Cheap when nothing is retained: a scan of the
    frame's variables and a search of at most `_GRAPH_SEARCH_NODES + 2 * since` nodes per tensor
    with history (the backpropagated loss is skipped). With `modules` ((name, module) pairs, last
    scanned `modules_since` steps ago), the tensors the modules hold as plain attributes or buffers
    too (`self.centers = 0.9 * self.centers + 0.1 * batch_centers`, a running mean updated outside
    no_grad), named `Model.layer.attribute`."""
    budget = _GRAPH_SEARCH_NODES + 2 * max(since, 1)
    out: list[list[Any]] = []
    if modules:
        module_budget = _GRAPH_SEARCH_NODES + 2 * max(modules_since, 1)
        for module_name, module in modules:
            for attribute, value in _module_tensors(module):
                if value.grad_fn is not None:
                    _tag_graph(f"{module_name}.{attribute}", value, step, module_budget, out, "attribute")
    for name, value in list(frame.f_locals.items()):
        if type(value) is list and lists is not None:
            if value and issubclass(type(value[-1]), torch.Tensor) and value[-1].grad_fn is not None:
                known = lists.get(name)
                if known is None or known[1] != id(value) or len(value) < known[2]:  # new, or emptied
                    known = (step, id(value), len(value))
                lists[name] = (known[0], id(value), len(value))
                if known[0] < step and len(out) < _MAX_GRAPHS:
                    out.append([name, known[0], len(value), "list"])
            else:
                lists.pop(name, None)
            continue
        if not issubclass(type(value), torch.Tensor) or id(value) == skip_id:  # type(): lazy proxies warn on __class__
            continue
        if value.grad_fn is not None:
            _tag_graph(name, value, step, budget, out)
    return out


def _module_tensors(module: torch.nn.Module) -> list[tuple[str, torch.Tensor]]:
    """The tensors a module holds as buffers or plain attributes (not its parameters: leaves)."""
    found = [(name, value) for name, value in module._buffers.items() if value is not None]
    found += [(name, value) for name, value in vars(module).items()
              if issubclass(type(value), torch.Tensor) and not isinstance(value, torch.nn.Parameter)]
    return found


def _tag_graph(name: str, value: torch.Tensor, step: int, budget: int, out: list[list[Any]],
               holder: str = "") -> None:
    """Tag the graph of `value` at this sample and add [name, first step held, nodes] to `out`
    when it holds the graph of an earlier sample (and `holder`, "attribute" for a module's)."""
    root = value.grad_fn
    tag = root.metadata.get(_GRAPH_TAG)
    if tag is None:  # a graph not seen before: does it hold one that was?
        held = _earlier_tag(root, step, budget)
        if held is None:
            tag = (step, step, 0)
        else:
            tag = (step, held[1], held[2] + _count_new_nodes(root, step))
        root.metadata[_GRAPH_TAG] = tag
    if tag[1] < step and tag[2] and len(out) < _MAX_GRAPHS:
        out.append([name, tag[1], tag[2], holder] if holder else [name, tag[1], tag[2]])


def _earlier_tag(root: Any, step: int, budget: int) -> tuple[int, int, int] | None:
    """The tag of a node under `root` tagged at an earlier sample, searched depth-first, first
    inputs first (the chain of `total = total + loss` runs through each node's first input)."""
    stack = [root]
    seen = {id(root)}
    while stack and budget > 0:
        node = stack.pop()
        budget -= 1
        children = [child for child, _ in node.next_functions if child is not None and id(child) not in seen]
        for child in children:
            seen.add(id(child))
            tag = child.metadata.get(_GRAPH_TAG)
            if tag is not None and tag[0] < step:
                return tag
        stack.extend(reversed(children))
    return None


def _count_new_nodes(root: Any, step: int) -> int:
    """The autograd nodes under `root` that no earlier sample counted (parameters' AccumulateGrad
    nodes, shared by every step, are left out)."""
    stack = [root]
    seen = {id(root)}
    count = 0
    while stack and count < _GRAPH_COUNT_NODES:
        node = stack.pop()
        if type(node).__name__ != "AccumulateGrad":
            count += 1
        for child, _ in node.next_functions:
            if child is None or id(child) in seen:
                continue
            seen.add(id(child))
            tag = child.metadata.get(_GRAPH_TAG)
            if tag is None or tag[0] == step:
                stack.append(child)
    return count


class Monitor:
    def __init__(self, config: dict[str, Any]) -> None:
        self.config = config
        self.run_dir = config["run_dir"]
        os.makedirs(self.run_dir, exist_ok=True)
        self.steps_file = open(os.path.join(self.run_dir, "steps.jsonl"), "w", encoding="utf-8")
        self.stop_on = config.get("stop_on")
        self.max_steps = config.get("max_steps")
        self.repeat_batches = config.get("repeat_batches")
        self.ratio_layers = int(config.get("ratio_layers", 4))
        self.ratio_every = max(1, int(config.get("ratio_every", 25)))
        self.per_layer = bool(config.get("per_layer"))
        self.fingerprint_rng = bool(config.get("fingerprint_rng"))
        self.spike_factor = float(config.get("stop_spike_factor", 10.0))
        self.meta: dict[str, Any] = {"pid": os.getpid(), "argv": list(sys.argv), "loaders": [], "warnings": [],
                                     "cuda": torch.cuda.is_available(), "repeat_batches": self.repeat_batches,
                                     "max_steps": self.max_steps}
        self.step = 0
        self.optimizer: Any = None
        self.params: list[torch.Tensor] = []
        self.names: list[str] = []
        self.never_grad: set[int] = set()
        self.ratio_index: list[int] = []
        self.update_ratios = _UpdateRatios()
        self.carry_probe = _GradientCarryProbe()
        self.ratio_values: torch.Tensor | None = None  # of the previous step, read at the next host sync
        self.ratio_names: list[str] = []  # the layers of `ratio_values`
        self.on_cpu = False  # the optimized parameters all live on the CPU
        self.modules: list[tuple[str, torch.nn.Module]] = []
        self.roots: list[torch.nn.Module] = []
        self.evals: list[tuple[str, str]] = []  # (name, class) of the modules in eval mode at the last scan
        self.loss: torch.Tensor | None = None
        self.scaled: tuple[Any, torch.Tensor] | None = None  # (weak ref to scaler.scale(loss), loss)
        self.backwards = 0
        self.label_calls = 0
        self.label_counts: torch.Tensor | None = None  # class counts of the first cross-entropy targets
        self.step_calls = 0  # optimizer.step() calls of any optimizer (a GradScaler skip makes none)
        self.skips_in_a_row = 0
        self.loss_leaves: list[int] | None = None  # id() of the trainable tensors the last loss before step 1 reached
        self.loss_leaf_params: dict[int, torch.Tensor] = {}  # those of them that are nn.Parameter, by id()
        self.backward_id = 0  # id() of the tensor last backpropagated (its graph is freed by backward)
        self.batch: Any = None  # the DataLoader's last batch
        self.batch_drawn = False  # a DataLoader batch was drawn since the last step
        self.step_input: torch.Tensor | None = None  # the model's first training input since the last step
        self.input_hooks: list[Any] = []  # forward pre-hooks, armed before a fingerprinted step only
        self.scaler: Any = None  # the GradScaler that scaled a loss, if any
        self.onset_read = False  # the first non-finite step's inputs and settings were read
        self.data_time = 0.0
        self.last_pre: float | None = None
        self.pending: dict[str, Any] | None = None  # this step's record; the update ratio completes it
        self.records: list[dict[str, Any]] = []  # complete records, serialised at the next flush
        self.losses_seen: list[float] = []
        self.lock = threading.Lock()
        self.last_flush = 0.0
        self.last_rss = 0.0
        self.heap_time = 0.0  # when glibc's free heap memory was last read, and what that cost
        self.heap_cost = 0.0
        self.graph_step = 0  # the step of the last search for retained graphs
        self.module_scan_step = 0  # ... and of the last one that read the modules' attributes too
        self.module_scan_time = 0.0
        self.module_scan_cost = 0.0  # seconds the last scan with the modules took
        self.graph_lists: dict[str, tuple[int, int, int]] = {}  # lists of tensors with history: name -> state
        self.closed = False
        self.step_taken = False  # the current optimizer step has been read (`_take_step`)
        self.others: dict[int, tuple[str, list[torch.Tensor], list[str]]] = {}  # id -> (label, params, names)
        self._handles: list[Any] = []
        self._patched: list[tuple[Any, str, Any, Any]] = []  # (owner, name, original, wrapper)

    # --- installation ------------------------------------------------------------------

    def install(self) -> None:
        self._handles.append(register_optimizer_step_pre_hook(self._guarded(self._pre_step)))
        self._handles.append(register_optimizer_step_post_hook(self._guarded(self._post_step)))
        monitor = self
        original_backward = torch.Tensor.backward

        def backward(tensor: torch.Tensor, *args: Any, **kwargs: Any) -> Any:
            if tensor.numel() == 1:
                scaled = monitor.scaled
                if scaled is not None and scaled[0]() is tensor:  # `scaler.scale(loss).backward()`
                    monitor.loss, monitor.scaled = scaled[1], None
                else:
                    monitor.loss = tensor.detach()
                monitor.backwards += 1
                monitor.backward_id = id(tensor)
                if monitor.optimizer is None and not _distributed_world():
                    monitor.loss_leaf_params = {}
                    monitor.loss_leaves = _trainable_leaves(tensor, parameters=monitor.loss_leaf_params)
                if "backward_site" not in monitor.meta:
                    monitor.meta["backward_site"] = user_site()
            return original_backward(tensor, *args, **kwargs)

        backward.__wrapped__ = original_backward  # type: ignore[attr-defined]
        self._patch(torch.Tensor, "backward", backward)

        # Mixed precision backpropagates the loss times GradScaler's scale (65536 at first, then
        # doubled and halved as the scaler adapts): the loss the run reports is the one before it.
        scaler_type = getattr(getattr(torch, "amp", None), "GradScaler", None) or torch.cuda.amp.GradScaler
        original_scale = scaler_type.scale

        def scale(scaler: Any, outputs: Any) -> Any:
            scaled = original_scale(scaler, outputs)
            if isinstance(outputs, torch.Tensor) and scaled is not outputs and outputs.numel() == 1:
                monitor.scaled = (weakref.ref(scaled), outputs.detach())
            monitor.scaler = scaler  # its scale is read at a NaN onset
            return scaled

        self._patch(scaler_type, "scale", scale)

        # GradScaler.step skips optimizer.step() when the gradients hold inf/NaN (and update() halves
        # the scale): no step hook fires, so a run whose every step is skipped would show nothing.
        original_scaler_step = scaler_type.step

        skipped_step = self._guarded(self._skipped_step)

        def scaler_step(scaler: Any, optimizer: Any, *args: Any, **kwargs: Any) -> Any:
            before = monitor.step_calls
            result = original_scaler_step(scaler, optimizer, *args, **kwargs)
            if monitor.step_calls == before and not monitor.closed:
                skipped_step(scaler)
            return result

        self._patch(scaler_type, "step", scaler_step)

        # The class frequencies of the first cross-entropy targets: a loss stuck at their entropy is a
        # classifier that learned only the frequencies (labels apart from their inputs). Counted on the
        # targets' device, read once at the end.
        original_cross_entropy = torch.nn.functional.cross_entropy

        count_labels = self._guarded(self._count_labels)

        def cross_entropy(input: Any, target: Any, *args: Any, **kwargs: Any) -> Any:
            if monitor.label_calls < _LABEL_CALLS:
                count_labels(input, target, kwargs.get("ignore_index", -100))
            return original_cross_entropy(input, target, *args, **kwargs)

        self._patch(torch.nn.functional, "cross_entropy", cross_entropy)

        original_next = _dl._BaseDataLoaderIter.__next__

        def timed_next(iterator: Any) -> Any:
            start = time.perf_counter()
            try:
                batch = monitor.batch = original_next(iterator)  # checked for NaN/inf at a NaN onset
                monitor.batch_drawn = True
                return batch
            finally:
                monitor.data_time += time.perf_counter() - start

        self._patch(_dl._BaseDataLoaderIter, "__next__", timed_next)

        original_iter = _dl.DataLoader.__iter__

        def loader_iter(loader: Any) -> Any:
            monitor._note_loader(loader)
            if monitor.repeat_batches:
                return _RepeatBatches(loader, original_iter, int(monitor.repeat_batches), monitor)
            return original_iter(loader)

        self._patch(_dl.DataLoader, "__iter__", loader_iter)

        if self.repeat_batches:
            self._watch_detaches()

        if self.config.get("deterministic"):
            torch.use_deterministic_algorithms(True, warn_only=True)
            original_showwarning = warnings.showwarning

            def showwarning(message: Any, category: Any, filename: str, lineno: int, *args: Any, **kw: Any) -> None:
                text = str(message)
                if len(monitor.meta["warnings"]) < _MAX_WARNINGS and "determinis" in text.lower():
                    monitor.meta["warnings"].append({"step": monitor.step + 1, "message": text.splitlines()[0][:400]})
                original_showwarning(message, category, filename, lineno, *args, **kw)

            self._patch(warnings, "showwarning", showwarning)

    def _watch_detaches(self) -> None:
        """overfit: where the user's code calls `.detach()` on a tensor with autograd history
        before the first optimizer step. When parameters never get a gradient, that line is
        where the graph was cut (the step() line is only where the symptom shows)."""
        monitor = self
        original_detach = torch.Tensor.detach

        def detach(tensor: torch.Tensor) -> torch.Tensor:
            sites = monitor.meta.setdefault("detach_sites", [])
            if monitor.step == 0 and tensor.grad_fn is not None and len(sites) < 5:
                caller = sys._getframe(1)
                site = user_site(2)
                # only a call made by the user's own line, not by torch or the monitor on its behalf
                if site is not None and os.path.abspath(caller.f_code.co_filename) == site["path"] \
                        and site not in sites:
                    sites.append(site)
            return original_detach(tensor)

        detach.__wrapped__ = original_detach  # type: ignore[attr-defined]
        self._patch(torch.Tensor, "detach", detach)

    def _patch(self, owner: Any, name: str, wrapper: Any) -> None:
        self._patched.append((owner, name, getattr(owner, name), wrapper))
        setattr(owner, name, wrapper)

    def _guarded(self, hook: Any) -> Any:
        """A bug in the monitor must never break the user's training: it stops monitoring instead."""

        def run(*args: Any) -> Any:
            try:
                return hook(*args)
            except (StopRun, NonFiniteTraining):
                raise
            except Exception as exc:
                self.meta["monitor_error"] = f"{type(exc).__name__}: {exc}"[:500]
                self.close(remove_hooks=False)  # torch is iterating over its hooks right now
                return None

        return run

    def _note_loader(self, loader: Any) -> None:
        if getattr(loader, "_traindoctor_seen", False) or len(self.meta["loaders"]) >= 8:
            return
        try:
            loader._traindoctor_seen = True
        except AttributeError:
            pass
        self.meta["loaders"].append({
            "num_workers": getattr(loader, "num_workers", None),
            "pin_memory": getattr(loader, "pin_memory", None),
            "persistent_workers": getattr(loader, "persistent_workers", None),
            "batch_size": getattr(loader, "batch_size", None),
            "prefetch_factor": getattr(loader, "prefetch_factor", None),
            "dataset": type(getattr(loader, "dataset", None)).__name__,
            "dataset_size": _length(getattr(loader, "dataset", None)),
            "collate_fn": _qualified_name(getattr(loader, "collate_fn", None)),
            "site": user_site(),
            "first_step": self.step + 1,
        })

    # --- the optimizer steps -------------------------------------------------------------

    def _discover(self, optimizer: Any) -> None:
        """Once: the optimized parameters, their names and the model(s) that own them."""
        self.optimizer = optimizer
        self.params = [p for group in optimizer.param_groups for p in group["params"]]
        self.on_cpu = all(p.device.type == "cpu" for p in self.params)
        roots = self.roots = _models_of(self.params)
        for root in roots:
            prefix = type(root).__name__
            for name, module in root.named_modules():
                self.modules.append((f"{prefix}.{name}" if name else prefix, module))
        self.names = _parameter_names(self.params, roots)
        self._arm_input_hooks()  # what the model is fed at step 2, for the same-batch check
        if self.loss_leaves is not None:
            # A loss that reaches trainable tensors, none of them this optimizer's: the model was rebuilt,
            # copied or replaced after the optimizer was created, and step() updates an unused copy.
            held = {id(p) for p in self.params}
            reached = len(held.intersection(self.loss_leaves))
            self.meta["loss_reaches"] = {"held": reached, "not_held": len(self.loss_leaves) - reached}
            if reached:
                # Some held and some not: the parameters no optimizer holds (a layer kept in a plain
                # list, a parameter group left out) get a gradient every step and never change.
                # nn.Parameter only: an input given requires_grad (adversarial examples) is no layer.
                left_out = _left_out_parameters(self.loss_leaves, self.loss_leaf_params, held, roots)
                if left_out:
                    self.meta["loss_reaches"]["left_out"] = left_out
            self.loss_leaves, self.loss_leaf_params = None, {}
        self.never_grad = set(range(len(self.params)))
        # Contiguous ones only: the ratio is read through a view of the parameter's storage.
        candidates = [i for i, p in enumerate(self.params) if p.dim() >= 2 and p.is_contiguous() and p.numel()]
        candidates = candidates or [i for i, p in enumerate(self.params) if p.is_contiguous() and p.numel()]
        if candidates and self.ratio_layers > 0:
            count = min(self.ratio_layers, len(candidates))
            self.ratio_index = sorted({candidates[round(k * (len(candidates) - 1) / max(count - 1, 1))]
                                       for k in range(count)})
        self.meta.update({
            "optimizer": type(optimizer).__name__,
            "model": [type(r).__name__ for r in roots],
            "param_names": self.names,
            "ratio_params": [self.names[i] for i in self.ratio_index],
            "step_site": user_site(3),
        })
        self._write_meta()

    def _pre_step(self, optimizer: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if self.closed:
            return None
        self.step_calls += 1
        self.skips_in_a_row = 0
        if self.optimizer is None:
            self._discover(optimizer)
        if optimizer is self.optimizer:
            self.step_taken = False
            take = self._take_step
        else:  # a second optimizer (a GAN's, an EMA's): its steps are only checked for non-finite values
            take = self._check_other
        closure = kwargs.get("closure", args[1] if len(args) > 1 else None)  # args[0] is the optimizer
        if callable(closure):
            return self._read_after(closure, take, optimizer, args, kwargs)
        take(optimizer)
        return None

    def _arm_input_hooks(self) -> None:
        """Forward pre-hooks on the root models until the next training forward: only before a step
        whose input is fingerprinted (any module hook slows every call of the model down)."""
        note = self._guarded(self._note_input)
        self.input_hooks = [root.register_forward_pre_hook(note, with_kwargs=True) for root in self.roots]

    def _disarm_input_hooks(self) -> None:
        for handle in self.input_hooks:
            handle.remove()
        self.input_hooks = []

    def _note_input(self, module: Any, args: Any, kwargs: Any) -> None:
        """The first tensor the model is called with in training (grad enabled), then no more hooks."""
        if torch.is_grad_enabled():
            tensors = _batch_tensors(list(args) + list(kwargs.values()))
            self.step_input = tensors[0] if tensors else None
            self._disarm_input_hooks()

    def _batch_fingerprint(self) -> list[Any] | None:
        """[a hash of the model's input (shape, dtype and 64 evenly spaced values), where that input
        is part of more data: "slice" (of a larger tensor), "loader" (a batch of a DataLoader whose
        dataset is larger than one batch), or ""]. Full-batch training feeds the same whole tensor
        every step: ""."""
        tensor = self.step_input
        if tensor is None:
            return None
        flat = tensor.detach().reshape(-1)
        picked = flat[::max(1, flat.numel() // _FINGERPRINT_VALUES)][:_FINGERPRINT_VALUES]
        digest = hash((tuple(tensor.shape), str(tensor.dtype), tuple(picked.tolist()))) & 0xFFFFFFFF
        base = tensor._base
        source = ""
        if base is not None and base.numel() > tensor.numel():
            source = "slice"
        elif self.batch_drawn:
            first = tensor.shape[0] if tensor.dim() else 1
            if any((loader.get("dataset_size") or 0) > first for loader in self.meta["loaders"]):
                source = "loader"
        return [digest, source]

    def _count_labels(self, input: Any, target: Any, ignore_index: Any) -> None:
        self.label_calls += 1
        if not (isinstance(input, torch.Tensor) and isinstance(target, torch.Tensor) and input.dim() >= 2
                and input.requires_grad and not target.is_floating_point() and target.dim() == input.dim() - 1):
            return  # class probabilities as targets, or an evaluation without autograd
        classes = input.shape[1]
        labels = target.detach().flatten()
        labels = labels[(labels >= 0) & (labels < classes) & (labels != ignore_index)]
        counts = torch.bincount(labels, minlength=classes)
        if self.label_counts is None or self.label_counts.numel() != classes:
            self.label_counts = counts
        else:
            self.label_counts += counts

    def _skipped_step(self, scaler: Any) -> None:
        """An optimizer step that GradScaler skipped (inf/NaN gradients): counted, with the loss of
        its backward and the scale (read lazily: a float of the scale tensor, as update() does)."""
        self.skips_in_a_row += 1
        loss, self.loss = self.loss, None
        skips = self.meta.setdefault("amp_skips", {"count": 0, "max_in_a_row": 0, "first_after_step": self.step,
                                                   "nonfinite_losses": 0, "losses_read": 0})
        skips["count"] += 1
        skips["max_in_a_row"] = max(skips["max_in_a_row"], self.skips_in_a_row)
        skips["last_after_step"] = self.step
        if loss is not None and skips["losses_read"] < 1000:
            value = float(loss.detach().float())
            skips["losses_read"] += 1
            skips["nonfinite_losses"] += not math.isfinite(value)
        try:
            skips["scale"] = float(scaler.get_scale())
        except Exception:
            pass
        if skips["count"] in (1, 10, 100) or skips["count"] % 1000 == 0:
            self._write_meta()

    def _read_after(self, closure: Any, take: Any, optimizer: Any, args: tuple[Any, ...],
                    kwargs: dict[str, Any]) -> Any:
        """A step with a closure (LBFGS; Lightning's `optimizer.step(closure=...)`) computes its loss
        and gradients inside `step`, after the pre-hook: the step is read when the closure first
        returns, before the optimizer uses them (so `--stop-on` still stops before the update)."""
        guarded = self._guarded(take)
        read = [False]

        def closure_then_read(*closure_args: Any, **closure_kwargs: Any) -> Any:
            result = closure(*closure_args, **closure_kwargs)
            if not read[0] and not self.closed:
                read[0] = True
                guarded(optimizer)
            return result

        if "closure" in kwargs:
            return args, {**kwargs, "closure": closure_then_read}
        return (args[0], closure_then_read, *args[2:]), kwargs

    def _check_other(self, optimizer: Any) -> None:
        """Another optimizer's step: its loss (the last backward's) and gradient norm go into the
        followed optimizer's record of this step, under `others`; a non-finite one is a NaN onset
        like the followed optimizer's (written at once, named, a stop with `--stop-on`)."""
        other = self.others.get(id(optimizer))
        if other is None:
            if len(self.others) >= _MAX_OTHER_OPTIMIZERS:
                return
            params = [p for group in optimizer.param_groups for p in group["params"]]
            models = _models_of(params)
            label = f"{type(optimizer).__name__} of {', '.join(type(m).__name__ for m in models) or 'parameters'}"
            if any(label == known[0] for known in self.others.values()):
                label += f" #{len(self.others) + 2}"
            other = self.others[id(optimizer)] = (label, params, _parameter_names(params, models))
            self.meta.setdefault("other_step_sites", {})[label] = user_site()
            self._write_meta()
        label, params, names = other
        grads, grad_index = _gradients(params)
        loss = self.loss
        on_cpu = all(g.device.type == "cpu" for g in grads) and (loss is None or loss.device.type == "cpu")
        loss_value, per_param, _ = _read(loss, grads, None, on_cpu)
        grad_norm = math.hypot(*per_param) if per_param else None
        record = self.pending if self.pending is not None else {"step": self.step}
        record.setdefault("others", {})[label] = {"loss": loss_value, "grad_norm": grad_norm,
                                                  "lr": _learning_rates(optimizer)}
        nonfinite_grad = grad_norm is not None and not math.isfinite(grad_norm)
        if not (nonfinite_grad or (loss_value is not None and not math.isfinite(loss_value))):
            return
        if nonfinite_grad and not record.get("nonfinite_grad"):
            record["nonfinite_grad"] = _first_nonfinite(per_param, grad_index, names)
        if record is not self.pending:
            self.records.append(record)
        if self.stop_on:
            value, what = (loss_value, "loss") if loss_value is not None and not math.isfinite(loss_value) \
                else (grad_norm, "gradient")
            self._stop(f"traindoctor: {what} of {label} is {value} at optimizer step {self.step}"
                       + (f", first in {record['nonfinite_grad']}" if record.get("nonfinite_grad") else "")
                       + " (stopped before the step)")
        self._write_records(flush_pending=True)

    def _take_step(self, optimizer: Any) -> None:
        """Read this optimizer step into its record. Runs between the backward and the update, with
        caches cold from the step itself: each line here costs several times what it costs in a tight
        loop. What can wait (non-finite values as text, names of per-layer values, JSON) is done in
        `_write_records`."""
        self.step_taken = True
        now = time.perf_counter()
        params = self.params
        grads, grad_index = _gradients(params)
        if self.never_grad:
            self.never_grad.difference_update(grad_index)
        loss = self.loss
        self.loss = None
        ratio_values, self.ratio_values = self.ratio_values, None
        loss_value, per_param, ratios = _read(loss, grads, ratio_values, self.on_cpu)
        grad_norm = math.hypot(*per_param) if grads else None
        pending = self.pending
        if pending is not None:
            if ratios:
                pending["update_ratio"] = dict(zip(self.ratio_names, ratios))
            self.pending = None
            self.records.append(pending)
        self.step += 1
        record: dict[str, Any] = {"step": self.step, "loss": loss_value, "grad_norm": grad_norm,
                                  "lr": _learning_rates(optimizer)}
        nonfinite_grad = grad_norm is not None and not math.isfinite(grad_norm)
        nonfinite = nonfinite_grad or (loss_value is not None and not math.isfinite(loss_value))
        if nonfinite_grad:
            record["nonfinite_grad"] = _first_nonfinite(per_param, grad_index, self.names)
        if nonfinite and not self.onset_read:
            self.onset_read = True
            record["onset"] = self._onset_context(optimizer)
        if self.carry_probe.param is not None:
            carried = self.carry_probe.check()
            if carried is not None:
                record["carried_grad"] = carried
        record["zero_grad_params"] = per_param.count(0.0)
        record["missing_grad_params"] = len(params) - len(grad_index)
        if self.per_layer:
            record["param_grad_norm"] = (grad_index, per_param)  # named in `_write_records`
        if self.last_pre is not None:
            record["step_time"] = now - self.last_pre
            record["data_time"] = self.data_time
        self.data_time = 0.0
        self.last_pre = now
        if self.step <= _RSS_EVERY_STEP_UNTIL or now - self.last_rss >= _RSS_EVERY_S:
            record["rss"] = _rss_bytes()
            self.last_rss = now
            # mallinfo2 walks the heaps' free lists: 0.1 ms, up to 10 ms when fragmented; read
            # at most every 100 times what the last read cost (a 1 % share of the run).
            if _MALLINFO2 is not None and now - self.heap_time >= 100 * self.heap_cost:
                started = time.perf_counter()
                record["heap_free"] = _heap_free_bytes()
                self.heap_time, self.heap_cost = now, time.perf_counter() - started
            # Not under DDP for now: walking a DDP graph's nodes (next_functions, metadata) was followed
            # by an abort at interpreter exit ("terminate called without an active exception") in 1 of
            # 12 gloo runs, and the distributed CI tests failed with it; until that is understood,
            # distributed ranks report memory growth without the graph evidence.
            frame = user_frame(3) if not _distributed_world() else None
            if frame is not None:
                try:
                    # The modules' attributes cost ~1 µs a module: read at most every 100 times
                    # what the last read cost (a 1 % share of the run, whatever the model's size),
                    # and at every power-of-two step whatever it cost: one read slowed by a busy
                    # machine must not leave a short run with a single reading (log2(steps) reads).
                    scan_modules = (now - self.module_scan_time >= 100 * self.module_scan_cost
                                    or self.step & (self.step - 1) == 0)
                    started = time.perf_counter()
                    graphs = retained_graphs(frame, self.step, self.backward_id, self.step - self.graph_step,
                                             self.graph_lists, self.modules if scan_modules else (),
                                             self.step - self.module_scan_step)
                    if scan_modules:
                        self.module_scan_step, self.module_scan_time = self.step, now
                        self.module_scan_cost = time.perf_counter() - started
                        record["modules_scanned"] = True  # an attribute's chain is judged at these samples
                except Exception:  # an exotic tensor or node: no graph evidence, the monitor goes on
                    graphs = []
                self.graph_step = self.step
                if graphs:
                    record["graphs"] = graphs
                    self._note_attribute_sites(graphs)
                    if "graph_site" not in self.meta:
                        code = frame.f_code
                        lines = [line for _, _, line in code.co_lines() if line]
                        self.meta["graph_site"] = {"path": os.path.abspath(code.co_filename),
                                                   "function": code.co_name, "first_line": code.co_firstlineno,
                                                   "last_line": max(lines, default=code.co_firstlineno)}
        if not self.on_cpu and torch.cuda.is_initialized():  # cheaper than is_available()
            record["cuda_allocated"] = torch.cuda.memory_allocated()
            record["cuda_reserved"] = torch.cuda.memory_reserved()
        if (self.step <= 5 or self.step % _EVAL_SCAN_EVERY == 0 or self.evals
                or not all(root.training for root in self.roots)):
            self.evals = [(name, type(m).__name__) for name, m in self.modules if not m.training]
        if self.evals:
            record["eval_modules"] = len(self.evals)
            record["eval_examples"] = self.evals[:_MAX_EVAL_NAMES]
        record["backwards"] = self.backwards
        self.backwards = 0
        if self.step_input is not None:
            fingerprint = self._batch_fingerprint()
            if fingerprint is not None:
                record["batch_fp"] = fingerprint
        self.step_input, self.batch_drawn = None, False
        self._disarm_input_hooks()  # a step whose forward the hooks did not see (a closure, eval only)
        upcoming = self.step + 1
        if upcoming <= _FINGERPRINT_EVERY_STEP_UNTIL or upcoming % _FINGERPRINT_EVERY == 0:
            self._arm_input_hooks()
        if self.fingerprint_rng:
            record["rng"] = _rng_fingerprints()
        self.pending = record
        # Parameters about to change: a copy of the sampled ones for the update ratio
        # (every step at first, then every `ratio_every` steps).
        if self.ratio_index and (self.step <= 5 or self.step % self.ratio_every == 0):
            sampled = [i for i in self.ratio_index if params[i].grad is not None]
            self.update_ratios.before([params[i] for i in sampled])
            self.ratio_names = [self.names[i] for i in sampled]
        else:
            self.update_ratios.before([])
        if self.stop_on:
            if loss_value is not None and self.stop_on == "any":
                self.losses_seen.append(loss_value)
            reason = self._stop_reason(loss_value, grad_norm)
            if reason:
                self._stop(reason)
        if nonfinite:  # the NaN onset reaches the disk at once, whatever happens next
            self._write_records(flush_pending=True)
        elif now - self.last_flush >= _FLUSH_EVERY_S:
            self._write_records()
            self.last_flush = now

    def _note_attribute_sites(self, graphs: list[list[Any]]) -> None:
        """Where the class of a module whose attribute holds a retained graph is defined: the line
        that updates `self.<attribute>` is searched there."""
        sites = self.meta.setdefault("attribute_sites", {})
        for entry in graphs:
            if len(entry) != 4 or entry[3] != "attribute" or entry[0] in sites:
                continue
            owner = dict(self.modules).get(entry[0].rsplit(".", 1)[0])
            try:
                lines, first = inspect.getsourcelines(type(owner))
                sites[entry[0]] = {"path": os.path.abspath(inspect.getsourcefile(type(owner)) or ""),
                                   "first_line": first, "last_line": first + len(lines) - 1,
                                   "target": "self." + entry[0].rsplit(".", 1)[1]}
            except (TypeError, OSError):
                sites[entry[0]] = {}

    def _onset_context(self, optimizer: Any) -> dict[str, Any]:
        """At the first non-finite step (once: it reads every weight): were this step's inputs
        finite (the weights before the update, the DataLoader's last batch), and the optimizer's
        and the GradScaler's settings, read live."""
        out: dict[str, Any] = {"params_finite": _all_finite(self.params)}
        if self.batch is not None:
            out["batch_finite"] = _all_finite(_batch_tensors(self.batch))
        group = optimizer.param_groups[0] if optimizer.param_groups else {}
        settings: dict[str, Any] = {}
        for key in ("betas", "eps", "weight_decay", "momentum"):
            value = group.get(key)
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                settings[key] = float(value)
            elif isinstance(value, (tuple, list)) and all(isinstance(v, (int, float)) for v in value):
                settings[key] = [float(v) for v in value]
        out["settings"] = settings
        if self.scaler is not None:
            try:
                out["scaler"] = {"scale": float(self.scaler.get_scale()), "enabled": bool(self.scaler.is_enabled())}
            except Exception:
                pass
        return out

    def _post_step(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        if self.closed or optimizer is not self.optimizer:
            return
        if not self.step_taken:  # a closure the optimizer never called
            self._take_step(optimizer)
        self.ratio_values = self.update_ratios.after()
        if self.step <= _CARRY_CHECKS and not _distributed_world():  # DDP averages .grad: nothing to compare
            probed = self.carry_probe.param
            self.carry_probe.start(self.params)
            if probed is None and self.carry_probe.param is not None:
                index = next(i for i, p in enumerate(self.params) if p is self.carry_probe.param)
                self.meta["carry_param"] = self.names[index]
        elif self.carry_probe.param is not None:
            self.carry_probe.stop()
        if self.max_steps and self.step >= self.max_steps:
            self.meta["stopped"] = {"step": self.step, "reason": "max-steps"}
            raise StopRun()

    def _stop(self, reason: str) -> None:
        """`--stop-on`: this step's record and the reason reach the disk, then the step raises."""
        self.meta["stopped"] = {"step": self.step, "reason": reason}
        self._write_records(flush_pending=True)
        self._write_meta()
        raise NonFiniteTraining(reason)

    def _stop_reason(self, loss: float | None, grad_norm: float | None) -> str | None:
        if not self.stop_on:
            return None
        if loss is not None and not math.isfinite(loss):
            return f"traindoctor: loss is {loss} at optimizer step {self.step} (stopped before the step)"
        if grad_norm is not None and not math.isfinite(grad_norm):
            where = self.pending.get("nonfinite_grad") if self.pending else None
            return (f"traindoctor: gradient is {grad_norm} at optimizer step {self.step}"
                    + (f", first in {where}" if where else "") + " (stopped before the step)")
        if self.stop_on == "any" and loss is not None and len(self.losses_seen) > 10:
            history = sorted(self.losses_seen[-21:-1])
            median = history[len(history) // 2]
            if median > 0 and loss > self.spike_factor * median:
                return (f"traindoctor: loss spiked to {loss:.4g} at optimizer step {self.step}, "
                        f"{loss / median:.1f}x the running median {median:.4g}")
        return None

    # --- output ------------------------------------------------------------------------------

    def _write_records(self, flush_pending: bool = False) -> None:
        """Serialise and write the complete records (and, for a non-finite step, a stop or the end
        of the run, the pending one, without its update ratio). Serialising a batch at each flush
        instead of a record every step costs less: the code and the encoder stay warm."""
        records = self.records
        if flush_pending and self.pending is not None:
            records.append(self.pending)
            self.pending = None
        if not records:
            return
        self.records = []
        names = self.names
        for record in records:
            # JSON has no NaN: non-finite values are written as "nan", "inf", "-inf".
            record["loss"] = _finite_or_text(record["loss"])
            record["grad_norm"] = _finite_or_text(record["grad_norm"])
            ratios = record.get("update_ratio")
            if ratios:
                record["update_ratio"] = {name: _finite_or_text(v) for name, v in ratios.items()}
            for values in (record.get("others") or {}).values():
                values["loss"] = _finite_or_text(values["loss"])
                values["grad_norm"] = _finite_or_text(values["grad_norm"])
            per_layer = record.get("param_grad_norm")
            if isinstance(per_layer, tuple):
                index, norms = per_layer
                record["param_grad_norm"] = {names[i]: _finite_or_text(v) for i, v in zip(index, norms)}
        text = "\n".join(map(json.dumps, records)) + "\n"
        with self.lock:
            if not self.steps_file.closed:
                self.steps_file.write(text)
                self.steps_file.flush()

    def _write_meta(self) -> None:
        path = os.path.join(self.run_dir, "run.json")
        temporary = path + ".tmp"
        with open(temporary, "w", encoding="utf-8") as handle:
            json.dump(self.meta, handle, default=str)
        os.replace(temporary, path)

    def close(self, exit_code: Any = None, error: str | None = None, remove_hooks: bool = True) -> None:
        if self.closed:
            if remove_hooks:
                self._remove_hooks()
            return
        self.closed = True
        if self.pending is not None and self.ratio_values is not None:
            try:
                ratios = _ratios(*self.ratio_values.tolist())
                self.pending["update_ratio"] = dict(zip(self.ratio_names, ratios))
            except Exception:
                pass
        self._write_records(flush_pending=True)
        self.meta["steps"] = self.step
        if self.label_counts is not None:
            try:
                self.meta["label_counts"] = self.label_counts.tolist()
            except Exception:
                pass
        self.meta["never_grad"] = [self.names[i] for i in sorted(self.never_grad)] if self.step else []
        self.meta["exit_code"] = exit_code
        if error:
            self.meta["error"] = error
        try:
            self.meta["cudnn_benchmark"] = bool(torch.backends.cudnn.benchmark)
            if self.params and self.config.get("checksum"):
                with torch.no_grad():
                    self.meta["checksum"] = float(sum(p.detach().double().sum().item() for p in self.params))
        except Exception:
            pass
        self._write_meta()
        with self.lock:
            self.steps_file.close()
        self.batch = self.scaler = None
        if remove_hooks:
            self._remove_hooks()

    def _remove_hooks(self) -> None:
        self.carry_probe.stop()
        self._disarm_input_hooks()
        for handle in self._handles:
            handle.remove()
        self._handles = []
        # The wrappers go too, unless something wrapped them in turn (then unwrapping would drop it).
        for owner, name, original, wrapper in reversed(self._patched):
            if getattr(owner, name) is wrapper:
                setattr(owner, name, original)
        self._patched = []


class _GradientCarryProbe:
    """Was a gradient reset between two optimizer steps? `backward()` adds to `.grad`; unless
    `zero_grad()` (or `p.grad = None`) runs between steps, every step applies the sum of all the
    gradients so far. On one small parameter, at the first steps: its gradient is copied at a step's
    end, and a hook sees each later backward's contribution before it is added, with `.grad` as it
    is then (None or all zeros: a reset). At the next step, no reset and `.grad` equal to the copy
    plus the contributions is a carried-over gradient. Whatever rescales `.grad` in between (DDP's
    averaging, clipping, GradScaler's unscale) breaks the equality and says nothing."""

    def __init__(self) -> None:
        self.param: torch.Tensor | None = None
        self.handle: Any = None
        self.left: torch.Tensor | None = None  # the gradient at the previous step's end
        self.added: torch.Tensor | None = None  # what backward added since
        self.reset = False  # a backward since found .grad None or zero

    def start(self, params: list[torch.Tensor]) -> None:
        if self.param is None:
            candidates = [p for p in params if p.grad is not None and not p.grad.is_sparse and p.requires_grad
                          and 0 < p.numel() <= 1 << 16]
            if not candidates:
                return
            self.param = min(candidates, key=lambda p: p.numel())
            self.handle = self.param.register_hook(self._add)
        grad = self.param.grad
        self.left = grad.detach().to(torch.float64, copy=True) if grad is not None else None
        self.added = None
        self.reset = False

    def _add(self, grad: torch.Tensor) -> None:
        current = self.param.grad if self.param is not None else None
        if current is None or not bool(current.any()):
            self.reset = True
        grad = grad.detach().to(torch.float64, copy=True)
        self.added = grad if self.added is None else self.added + grad

    def check(self) -> bool | None:
        """True: the gradient still holds the previous step's; False: it was reset; None: cannot tell."""
        grad = self.param.grad if self.param is not None else None
        left, added, reset = self.left, self.added, self.reset
        self.left = self.added = None
        if reset:
            return False
        if grad is None or left is None or added is None or grad.is_sparse or grad.shape != added.shape:
            return None
        grad = grad.detach().to(torch.float64)
        left_norm = float(left.norm())
        tolerance = 1e-5 * (left_norm + float(added.norm())) + 1e-12
        if left_norm > 100 * tolerance and float((grad - added - left).norm()) <= tolerance:
            return True
        return None

    def stop(self) -> None:
        if self.handle is not None:
            self.handle.remove()
        self.param = self.handle = self.left = self.added = None
        self.reset = False


class _RepeatBatches:
    """The loader's first K batches, again and again (`overfit`): same length per epoch as the loader."""

    def __init__(self, loader: Any, original_iter: Any, count: int, monitor: Monitor) -> None:
        cached = getattr(loader, "_traindoctor_batches", None)
        if cached is None:
            real = original_iter(loader)
            cached = []
            start = time.perf_counter()
            for _ in range(count):
                try:
                    cached.append(next(real))
                except StopIteration:
                    break
            monitor.data_time += time.perf_counter() - start
            del real  # shuts down the worker processes of this iterator
            try:
                loader._traindoctor_batches = cached
            except AttributeError:
                pass
        self.batches = cached
        try:
            self.remaining = len(loader)
        except TypeError:  # an IterableDataset without __len__: the step limit ends the run
            self.remaining = None
        self.index = 0

    def __iter__(self) -> "_RepeatBatches":
        return self

    def __next__(self) -> Any:
        if not self.batches or self.remaining == 0:
            raise StopIteration
        if self.remaining is not None:
            self.remaining -= 1
        batch = self.batches[self.index % len(self.batches)]
        self.index += 1
        return batch

    def __len__(self) -> int:
        return self.remaining or 0


def _trainable_leaves(loss: torch.Tensor, budget: int = 200_000,
                      parameters: dict[int, torch.Tensor] | None = None) -> list[int] | None:
    """id() of every tensor that backward from `loss` accumulates a gradient into (its autograd
    graph's AccumulateGrad nodes), or None past `budget` nodes; those that are nn.Parameter go
    into `parameters` (id -> tensor)."""
    root = loss.grad_fn
    if root is None:
        return []
    seen, stack, leaves = {root}, [root], []
    while stack:
        node = stack.pop()
        variable = getattr(node, "variable", None)
        if isinstance(variable, torch.Tensor):
            leaves.append(id(variable))
            if parameters is not None and isinstance(variable, torch.nn.Parameter):
                parameters[id(variable)] = variable
        for child, _ in node.next_functions:
            if child is not None and child not in seen:
                if len(seen) >= budget:
                    return None
                seen.add(child)
                stack.append(child)
    return leaves


def _left_out_parameters(leaves: list[int], found: dict[int, torch.Tensor], held: set[int],
                         roots: list[torch.nn.Module]) -> list[str]:
    """The nn.Parameters among `leaves` (id() of the tensors a loss reached; `found`: those that
    are nn.Parameter) that no live optimizer holds (this one's are `held`; a GAN's other optimizer
    holds the other model's), named `Model.layer.weight` where a model registers them, else by
    shape (a layer in a plain list)."""
    candidates = [found[i] for i in dict.fromkeys(leaves) if i in found and i not in held]
    if not candidates:
        return []
    for obj in gc.get_objects():
        if isinstance(obj, torch.optim.Optimizer):
            held = held | {id(p) for group in obj.param_groups for p in group["params"]}
    names = {id(p): f"{type(model).__name__}.{name}" for model in roots for name, p in model.named_parameters()}
    return [names.get(id(p), "unregistered " + "x".join(map(str, p.shape)) + " tensor")
            for p in candidates if id(p) not in held]


def _models_of(params: list[torch.Tensor]) -> list[torch.nn.Module]:
    """The outermost live modules that own these parameters."""
    wanted = {id(p) for p in params}
    owners = []
    for obj in gc.get_objects():
        if issubclass(type(obj), torch.nn.Module):  # type(): lazy proxies warn on __class__
            try:
                if any(id(p) in wanted for p in obj.parameters(recurse=False)):
                    owners.append(obj)
            except Exception:
                continue
    return _root_modules(owners)


def _parameter_names(params: list[torch.Tensor], models: list[torch.nn.Module]) -> list[str]:
    """`Model.layer.weight` for each parameter (`param[i]` for one no module owns)."""
    names: dict[int, str] = {}
    for model in models:
        prefix = type(model).__name__
        for name, p in model.named_parameters():
            names.setdefault(id(p), f"{prefix}.{name}")
    return [names.get(id(p), f"param[{i}]") for i, p in enumerate(params)]


def _root_modules(modules: list[torch.nn.Module]) -> list[torch.nn.Module]:
    """The outermost modules among those that own optimized parameters (the model)."""
    containers = []
    owners = {id(m) for m in modules}
    for obj in gc.get_objects():
        if issubclass(type(obj), torch.nn.Module):
            try:
                if any(id(child) in owners for child in obj.modules()):
                    containers.append(obj)
            except Exception:
                continue
    inner = set()
    for module in containers:
        for child in list(module.modules())[1:]:
            inner.add(id(child))
    roots = [m for m in containers if id(m) not in inner]
    return roots or modules


def _all_finite(tensors: list[torch.Tensor]) -> bool:
    """No NaN or inf in any floating-point tensor of the list (exact, unlike a norm that can
    overflow; one host sync per device)."""
    with torch.no_grad():
        flags = [torch.isfinite(t).all() for t in tensors if t.is_floating_point() or t.is_complex()]
        by_device: dict[Any, list[torch.Tensor]] = {}
        for flag in flags:
            by_device.setdefault(flag.device, []).append(flag)
        return all(bool(torch.stack(group).all()) for group in by_device.values())


def _length(dataset: Any) -> int | None:
    try:
        return len(dataset)
    except Exception:  # an IterableDataset, or one whose __len__ fails
        return None


def _qualified_name(function: Any) -> str | None:
    """module.qualname of a callable (a DataLoader's collate_fn), None for anything else."""
    module, name = getattr(function, "__module__", None), getattr(function, "__qualname__", None)
    return f"{module}.{name}" if module and name else None


def _batch_tensors(batch: Any, depth: int = 0) -> list[torch.Tensor]:
    """The tensors of a batch (a tensor, or tuples, lists and dicts of them, two levels deep)."""
    if isinstance(batch, torch.Tensor):
        return [batch]
    if depth >= 2:
        return []
    items = batch.values() if isinstance(batch, dict) else batch if isinstance(batch, (tuple, list)) else ()
    return [t for item in list(items)[:32] for t in _batch_tensors(item, depth + 1)]


def _gradients(params: list[torch.Tensor]) -> tuple[list[torch.Tensor], list[int]]:
    """The gradients the parameters have (a sparse one as its stored values), and their indices."""
    grads = []
    grad_index = []
    for i, p in enumerate(params):
        grad = p.grad
        if grad is not None:
            grads.append(grad.coalesce().values() if grad.is_sparse else grad)
            grad_index.append(i)
    return grads, grad_index


def _first_nonfinite(norms: list[float], grad_index: list[int], names: list[str]) -> str | None:
    """The name of the first parameter whose gradient norm is not finite."""
    bad = next((grad_index[k] for k, v in enumerate(norms) if not math.isfinite(v)), None)
    return names[bad] if bad is not None else None


def _read(loss: torch.Tensor | None, grads: list[torch.Tensor], ratio_values: torch.Tensor | None,
          on_cpu: bool) -> tuple[float | None, list[float], list[float]]:
    """The loss, the per-parameter gradient norms and the previous step's update ratios, as
    numbers: on an accelerator in one host sync; on the CPU there is no sync to save, and
    reading each value directly costs less than stacking them."""
    norms = torch._foreach_norm(grads) if grads else []
    if on_cpu:
        return (loss.item() if loss is not None else None, [norm.item() for norm in norms],
                _ratios(*ratio_values.tolist()) if ratio_values is not None else [])
    pieces = [loss.reshape(1)] if loss is not None else []
    if ratio_values is not None:
        pieces.append(ratio_values.reshape(-1))
    if norms:
        pieces.append(torch.stack(norms))
    values = _host_values(pieces)  # the one host sync of the step
    loss_value = values.pop(0) if loss is not None else None
    layers = ratio_values.shape[1] if ratio_values is not None else 0
    return loss_value, values[2 * layers:], _ratios(values[:layers], values[layers:2 * layers])


def _host_values(pieces: list[torch.Tensor]) -> list[float]:
    """The values of 1-d tensors (the loss, update ratios, gradient norms) in one host sync."""
    if not pieces:
        return []
    try:
        return torch.cat(pieces).tolist()
    except RuntimeError:  # on several devices (model parallel)
        device = pieces[0].device
        return torch.cat([piece.to(device, torch.float32) for piece in pieces]).tolist()


class _UpdateRatios:
    """||weights after - weights before|| / ||weights before|| for a few layers, estimated on an
    evenly spread sample of each layer's weights: one copy before the step and a handful of
    tensor operations after it (copying whole layers was once the monitor's largest cost)."""

    def __init__(self) -> None:
        self.key: tuple[int, ...] = ()
        self.views: list[torch.Tensor] = []
        self.rows: list[int] = []
        self.copy: torch.Tensor | None = None

    def before(self, params: list[torch.Tensor]) -> None:
        self.copy = None
        if not params:
            return
        key = tuple(p.data_ptr() for p in params)  # parameters re-assigned (`p.data = ...`): new views
        if key != self.key:
            self.key = key
            chunk = min(_RATIO_CHUNK, *(p.numel() for p in params))  # one width, to concatenate them
            self.views = [_ratio_sample(p, chunk) for p in params]
            self.rows = [view.shape[0] for view in self.views]
        try:
            copy = torch.cat(self.views)
        except RuntimeError:  # layers on several devices: no ratios
            return
        self.copy = copy if copy.dtype == torch.float32 else copy.float()

    def after(self) -> torch.Tensor | None:
        """The norms of each layer's update, then of its weights, as one 2 x layers tensor (not
        read yet: no sync); `_ratios` divides them."""
        if self.copy is None:
            return None
        before, self.copy = self.copy, None
        change = torch.cat(self.views).to(before.dtype).sub_(before)
        norms = torch._foreach_norm(change.split(self.rows) + before.split(self.rows))
        return torch.stack(norms).view(2, -1)


def _ratio_sample(param: torch.Tensor, chunk: int) -> torch.Tensor:
    """A view (no copy) of at most `_RATIO_SAMPLE` of the parameter's values: rows of `chunk`
    consecutive values, spread evenly over it. Runs, not single values at a stride: a value at
    every 32nd place touched as much memory as reading the whole layer."""
    flat = param.detach().reshape(-1)
    rows = max(1, min(_RATIO_SAMPLE // chunk, flat.numel() // chunk))
    return flat.as_strided((rows, chunk), (flat.numel() // rows, 1))


def _rng_fingerprints() -> dict[str, int]:
    """Checksums of the global RNG states: equal across two runs only if seeded alike."""
    import random

    out = {"torch": zlib.crc32(torch.get_rng_state().numpy().tobytes()),
           "python": zlib.crc32(repr(random.getstate()).encode())}
    numpy = sys.modules.get("numpy")
    if numpy is not None:
        state = numpy.random.get_state()
        out["numpy"] = zlib.crc32(state[1].tobytes() + str(state[2]).encode())
    return out


def _ratios(updates: list[float], weights: list[float]) -> list[float]:
    """Update ratios from the norms of `_UpdateRatios.after`."""
    return [update / max(weight, 1e-12) for update, weight in zip(updates, weights)]


def _learning_rates(optimizer: Any) -> list[float | None]:
    """Each parameter group's learning rate as a number (a float, an int or a tensor)."""
    return [lr if type(lr) is float else float(lr) if isinstance(lr, int) else
            float(lr.item()) if hasattr(lr, "item") else None
            for lr in [group.get("lr") for group in optimizer.param_groups]]


def _finite_or_text(value: float | None) -> Any:
    """JSON has no NaN: non-finite values are written as "nan", "inf", "-inf"."""
    if value is None or math.isfinite(value):
        return value
    return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
