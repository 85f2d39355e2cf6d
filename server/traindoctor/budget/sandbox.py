"""The fake world one budget step runs in, inside the user's process (no traindoctor imports).

Every tensor is a FakeTensor (torch's FakeTensorMode: shapes, dtypes and storages' sizes, no data);
a GPU-targeted script runs on a CPU-only machine because device requests for "cuda" go to the fake
CPU device and `torch.cuda` answers as one GPU would; what a fake tensor cannot answer (a value, a
data-dependent shape, an op with no fake kernel) gets a stand-in, and each stand-in is named in
`notes` so the report can say what it could not count.
"""

from __future__ import annotations

import functools
import sys
from typing import Any, Callable

import torch
from torch._subclasses.fake_tensor import (
    DataDependentOutputException,
    DynamicOutputShapeException,
    FakeTensor,
    FakeTensorMode,
    UnsupportedOperatorException,
    unset_fake_temporarily,
)
from torch.utils._pytree import tree_leaves, tree_map
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils.weak import WeakIdKeyDictionary

aten = torch.ops.aten


class Notes:
    """What the fake step could not follow, once per (kind, what), in order."""

    def __init__(self) -> None:
        self.items: dict[tuple[str, str], dict[str, Any]] = {}

    def add(self, kind: str, what: str, detail: str) -> None:
        key = (kind, what)
        if key in self.items:
            self.items[key]["count"] += 1
        else:
            self.items[key] = {"kind": kind, "what": what, "detail": detail, "count": 1}

    def to_json(self) -> list[dict[str, Any]]:
        return list(self.items.values())


def _is_cuda(device: Any) -> bool:
    if isinstance(device, torch.device):
        return device.type == "cuda"
    if isinstance(device, str):
        return device.startswith("cuda")
    return isinstance(device, int) and not isinstance(device, bool)  # `.to(0)`, `.cuda(0)`


class DeviceRedirect(TorchFunctionMode):
    """Every request for a CUDA device becomes the fake CPU device (the report still speaks of the GPU)."""

    def __torch_function__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
        kwargs = dict(kwargs or {})
        if _is_cuda(kwargs.get("device")):
            kwargs["device"] = "cpu"
        name = getattr(func, "__name__", "")
        if name == "cuda" or name == "pin_memory":  # Tensor.cuda(), Tensor.pin_memory(): already "there"
            return args[0]
        if name == "to" and len(args) > 1 and _is_cuda(args[1]):
            args = (args[0], "cpu", *args[2:])
        return func(*args, **kwargs)


class Stand_ins(TorchDispatchMode):  # noqa: N801 - reads as what it provides
    """Below the trackers, above FakeTensorMode: answers what fake tensors cannot, and notes it.

    - a value (`.item()`, `float(t)`, `if t:`): the real one for a tiny tensor computed from real values
      (a length drawn with torch.randint), else 0 / False, so control flow driven by it is not followed;
    - an output shape that depends on values (nonzero, a boolean mask): its upper bound;
    - an op with no fake kernel (a custom extension): an output shaped like its first tensor input.
    """

    def __init__(self, notes: Notes) -> None:
        super().__init__()
        self.notes = notes
        # Tiny tensors (sequence lengths, indices, masks drawn by the script) also get a real value, so
        # `int(n)` of a length drawn with torch.randint is right; model-sized tensors stay fake.
        self.shadows = WeakIdKeyDictionary()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
        kwargs = kwargs or {}
        if func is aten._local_scalar_dense.default and args[0] in self.shadows:
            with unset_fake_temporarily():
                return self.shadows[args[0]].item()
        if func.overloadpacket in KERNEL_SPECIFIC:
            self.notes.add("kernel workspace", str(func.overloadpacket), KERNEL_SPECIFIC[func.overloadpacket])
        try:
            out = func(*args, **kwargs)
            self._shadow(func, args, kwargs, out)
            return out
        except DataDependentOutputException:
            if func is not aten._local_scalar_dense.default:
                raise
            caller = _user_caller()
            if caller is None:  # torch's own DataLoader (a sampler's indices): not the script's control flow
                return False if args[0].dtype == torch.bool else 0
            self.notes.add("value", caller, "a tensor's value was read (`.item()`, `float()`, `if tensor:`); "
                           "fake tensors have none: 0 was used, control flow that depends on it is not followed")
            dtype = args[0].dtype
            return False if dtype == torch.bool else (0.0 if dtype.is_floating_point else 0)
        except DynamicOutputShapeException:
            out = _upper_bound(func, args, kwargs)
            if out is None:
                raise
            self.notes.add("data-dependent shape", str(func.overloadpacket.__name__),
                           f"{func} has an output shape that depends on values: counted at its upper bound "
                           f"(every element selected), at {_user_caller() or 'torch.utils.data'}")
            return out
        except (UnsupportedOperatorException, RuntimeError, NotImplementedError) as exc:
            text = str(exc)
            if not isinstance(exc, UnsupportedOperatorException) and "fake impl" not in text \
                    and "Meta" not in text:
                raise
            first = next((a for a in args if isinstance(a, torch.Tensor)), None)
            if first is None:
                raise
            self.notes.add("custom op", str(func), f"{func} has no fake (meta) kernel, e.g. a custom CUDA "
                           f"extension: its output was assumed to be like its first input {tuple(first.shape)} "
                           f"and its own workspace is not counted")
            return torch.empty_like(first)


    def _shadow(self, func: Any, args: Any, kwargs: Any, out: Any) -> None:
        outputs = [t for t in tree_leaves(out) if isinstance(t, torch.Tensor)]
        if not outputs or any(t.numel() > SHADOW_LIMIT for t in outputs):
            return
        inputs = [t for t in tree_leaves((args, kwargs)) if isinstance(t, torch.Tensor)]
        if any(isinstance(t, FakeTensor) and t not in self.shadows for t in inputs):
            return
        real = lambda t: self.shadows.get(t, t) if isinstance(t, FakeTensor) else t  # noqa: E731
        try:
            with unset_fake_temporarily(), torch.no_grad():
                result = func(*tree_map(real, args), **tree_map(real, kwargs))
        except Exception:  # noqa: BLE001 - no value then; the fake result stands
            return
        for fake, value in zip(outputs, [t for t in tree_leaves(result) if isinstance(t, torch.Tensor)]):
            self.shadows[fake] = value


SHADOW_LIMIT = 4096  # elements

# Ops whose memory depends on the kernel the device picks, which the fake CPU step does not run.
_RNN = ("a recurrent layer (LSTM/GRU/RNN): the fake step follows the CPU kernel's shapes; the workspace "
        "it keeps for backward (oneDNN on a CPU, cuDNN's reserve space on a GPU) is not counted exactly; "
        "on an LSTM the saved activations were 59 % under exact accounting of a real CPU step")
KERNEL_SPECIFIC = {packet: _RNN for packet in (aten.mkldnn_rnn_layer, aten.lstm, aten.gru, aten.rnn_tanh,
                                                aten.rnn_relu, aten._cudnn_rnn)}


def _upper_bound(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    packet = func.overloadpacket
    if packet in (aten.nonzero, aten.argwhere):
        return torch.empty((args[0].numel(), args[0].dim()), dtype=torch.long)
    if packet is aten.masked_select:
        size = torch.broadcast_shapes(args[0].shape, args[1].shape)
        return torch.empty((int(torch.Size(size).numel()),), dtype=args[0].dtype)
    if packet is aten.index and len(args) > 1:
        indices = [_all_selected(i) if i is not None and i.dtype == torch.bool else i for i in args[1]]
        flat = [j for i in indices for j in (i if isinstance(i, tuple) else (i,))]
        return func(args[0], flat)
    return None


def _all_selected(mask: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """A boolean mask's upper bound as integer indices: as many as the mask has elements, per dimension."""
    return tuple(torch.zeros((mask.numel(),), dtype=torch.long) for _ in range(mask.dim()))


def _user_caller() -> str | None:
    """file:line of the innermost frame outside torch and traindoctor (where the user's code asked);
    None when torch's data loading asked."""
    frame = sys._getframe(2)
    while frame is not None:
        name = frame.f_code.co_filename
        if "/torch/utils/data/" in name:
            return None
        if "/torch/" not in name and "traindoctor" not in name and not name.startswith("<"):
            return f"{name}:{frame.f_lineno}"
        frame = frame.f_back
    return "?"


def _convert(module: torch.nn.Module, dtype: torch.dtype) -> None:
    """`module.to(dtype)` for fake parameters, which `Module._apply` cannot swap in place: new Parameter
    objects (scripts convert before they build the optimizer) and buffers, floating point ones only."""
    for owner in module.modules():
        for name, param in list(owner._parameters.items()):
            if param is not None and param.is_floating_point() and param.dtype != dtype:
                with torch.no_grad():
                    owner._parameters[name] = torch.nn.Parameter(param.to(dtype), requires_grad=param.requires_grad)
        for name, buffer in list(owner._buffers.items()):
            if buffer is not None and buffer.is_floating_point() and buffer.dtype != dtype:
                owner._buffers[name] = buffer.to(dtype)


class Patches:
    """Attributes replaced while the budget runs, restored by `undo`."""

    def __init__(self) -> None:
        self.saved: list[tuple[Any, str, Any]] = []

    def set(self, owner: Any, name: str, value: Any) -> None:
        self.saved.append((owner, name, getattr(owner, name)))
        setattr(owner, name, value)

    def undo(self) -> None:
        for owner, name, value in reversed(self.saved):
            setattr(owner, name, value)
        self.saved.clear()


class FakeWorld:
    """Enter: fake tensors, CUDA redirected, stand-ins; `torch.cuda` answers for the target GPU."""

    def __init__(self, gpu_name: str, gpu_memory: int, world_size: int, notes: Notes) -> None:
        self.gpu_name = gpu_name
        self.gpu_memory = gpu_memory
        self.world_size = world_size
        self.notes = notes
        self.fake = FakeTensorMode(allow_non_fake_inputs=True)
        self.stand_ins = Stand_ins(notes)
        self.redirect = DeviceRedirect()
        self.patches = Patches()

    def enter(self) -> None:
        self._patch_cuda()
        self._patch_modules()
        self._patch_autocast()
        self._patch_load()
        self.fake.__enter__()
        self.stand_ins.__enter__()
        self.redirect.__enter__()

    def exit(self) -> None:
        for mode in (self.redirect, self.stand_ins, self.fake):
            try:
                mode.__exit__(None, None, None)
            except Exception:  # noqa: BLE001 - a mode stack the user's code left unbalanced
                pass
        self.patches.undo()

    def _patch_cuda(self) -> None:
        cuda = torch.cuda
        props = type("FakeDeviceProperties", (), {"name": self.gpu_name, "total_memory": self.gpu_memory,
                                                  "major": 9, "minor": 0, "multi_processor_count": 132})()
        answers: dict[str, Callable[..., Any]] = {
            "is_available": lambda: True, "device_count": lambda: max(1, self.world_size),
            "current_device": lambda: 0, "set_device": lambda *a, **k: None,
            "synchronize": lambda *a, **k: None, "empty_cache": lambda: None,
            "get_device_name": lambda *a, **k: self.gpu_name,
            "get_device_properties": lambda *a, **k: props,
            "get_device_capability": lambda *a, **k: (9, 0),
            "is_bf16_supported": lambda *a, **k: True,
            "manual_seed": lambda seed: None, "manual_seed_all": lambda seed: None,
            "memory_allocated": lambda *a, **k: 0, "max_memory_allocated": lambda *a, **k: 0,
            "memory_reserved": lambda *a, **k: 0, "max_memory_reserved": lambda *a, **k: 0,
            "reset_peak_memory_stats": lambda *a, **k: None,
            "mem_get_info": lambda *a, **k: (self.gpu_memory, self.gpu_memory),
        }
        for name, answer in answers.items():
            if hasattr(cuda, name):
                self.patches.set(cuda, name, answer)

    def _patch_modules(self) -> None:
        def to(module: torch.nn.Module, *args: Any, **kwargs: Any) -> torch.nn.Module:
            device, dtype, non_blocking, memory_format = torch._C._nn._parse_to(*args, **kwargs)
            if dtype is not None:
                _convert(module, dtype)
            return module  # everything already lives on the one fake device

        self.patches.set(torch.nn.Module, "to", to)
        self.patches.set(torch.nn.Module, "cuda", lambda module, *a, **k: module)
        for name, dtype in (("half", torch.float16), ("bfloat16", torch.bfloat16), ("float", torch.float32),
                            ("double", torch.float64)):
            self.patches.set(torch.nn.Module, name, functools.partialmethod(to, dtype))

    def _patch_autocast(self) -> None:
        autocast = torch.amp.autocast_mode.autocast
        original = autocast.__init__

        @functools.wraps(original)
        def init(self_: Any, device_type: str, *args: Any, **kwargs: Any) -> None:
            # CPU autocast has bf16 and fp16 and the same lower-precision list for matmuls and convolutions.
            original(self_, "cpu" if device_type == "cuda" else device_type, *args, **kwargs)

        self.patches.set(autocast, "__init__", init)

    def _patch_load(self) -> None:
        original = torch.load
        notes = self.notes

        @functools.wraps(original)
        def load(f: Any, *args: Any, **kwargs: Any) -> Any:
            notes.add("checkpoint", str(f) if isinstance(f, (str, bytes)) or hasattr(f, "__fspath__") else "?",
                      "a checkpoint was loaded: its tensors were read for real (host memory, not counted on the "
                      "GPU) and their values are not in the fake step; what the script does with values is not "
                      "followed")
            kwargs["map_location"] = "cpu"
            return original(f, *args, **kwargs)

        self.patches.set(torch, "load", load)

        def save(obj: Any, f: Any, *args: Any, **kwargs: Any) -> None:
            notes.add("checkpoint", "torch.save", "the script saves a checkpoint: fake tensors have no values, "
                      "so nothing was written")

        self.patches.set(torch, "save", save)

        def compile(model: Any = None, *args: Any, **kwargs: Any) -> Any:  # noqa: A001 - torch's name
            notes.add("torch.compile", "torch.compile", "torch.compile was not applied: the estimate is for eager "
                      "mode (compiled graphs often keep fewer activations and fuse temporaries away)")
            return model if model is not None else (lambda fn: fn)

        self.patches.set(torch, "compile", compile)
