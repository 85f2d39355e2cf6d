"""Derived facts: the values a signature's regexes pull out, turned into the
numbers and flags its templates need (sizes in bytes, fragmentation, key lists).

`derive(kind, facts, exception_text)` returns new facts; it never raises on
odd values (a fact that cannot be computed is simply absent).
"""

from __future__ import annotations

import re
from typing import Any, Callable

_UNITS = {"": 1, "B": 1, "K": 1024, "M": 1024**2, "G": 1024**3, "T": 1024**4, "P": 1024**5}
_SIZE = re.compile(r"^\s*([\d.]+)\s*([KMGTP]?)i?B?\s*$")


def parse_size(text: str | None) -> int | None:
    """'1.95 GiB' -> bytes; None when it is not a size."""
    if not text:
        return None
    found = _SIZE.match(text)
    if not found:
        return None
    try:
        return int(float(found.group(1)) * _UNITS[found.group(2)])
    except ValueError:
        return None


def human_size(n: int | float) -> str:
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if abs(value) < 1024 or unit == "PiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.2f} {unit}"
        value /= 1024
    return f"{value:.2f} PiB"


def derive(kind: str, facts: dict[str, Any], text: str) -> dict[str, Any]:
    handler = _HANDLERS.get(kind)
    if handler is None:
        return {}
    try:
        return handler(facts, text)
    except (ValueError, TypeError, ZeroDivisionError, KeyError):
        return {}  # odd values: keep what the regexes gave


def _cuda_oom(facts: dict[str, Any], text: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    sizes = {k: parse_size(facts.get(k)) for k in
             ("requested", "total", "free", "allocated", "reserved_unallocated", "reserved", "cached", "in_use")}
    if sizes["reserved_unallocated"] is None:
        if sizes["reserved"] is not None and sizes["allocated"] is not None:
            sizes["reserved_unallocated"] = max(0, sizes["reserved"] - sizes["allocated"])
        elif sizes["cached"] is not None and sizes["allocated"] is not None:
            # "cached" meant all reserved memory in some releases and only the
            # unused part in others; it can only include allocated memory if larger.
            cached, allocated = sizes["cached"], sizes["allocated"]
            sizes["reserved_unallocated"] = cached - allocated if cached >= allocated else cached
        if sizes["reserved_unallocated"] is not None:
            out["reserved_unallocated"] = human_size(sizes["reserved_unallocated"])
    requested, total, free = sizes["requested"], sizes["total"], sizes["free"]
    unallocated = sizes["reserved_unallocated"]
    if unallocated is not None:
        # Fragmentation is the likely cause when the cache holds enough for the
        # request and is a real share of what PyTorch reserved; when it would fit
        # the request but is a sliver of the reservation, live tensors are the cause.
        reserved = unallocated + (sizes["allocated"] or 0)
        fits = requested is None or unallocated >= requested
        large = reserved > 0 and unallocated >= 0.1 * reserved
        out["fragmentation"] = fits and large
        out["fragmentation_minor"] = fits and not large and requested is not None
    if total and free is not None and sizes["in_use"] is not None:
        other = total - free - sizes["in_use"]
        if other > 0:
            out["other_usage"] = human_size(other)
            out["other_usage_large"] = other >= 0.1 * total
    out["no_sizes"] = requested is None and total is None
    out["alloc_conf_name"] = facts.get("alloc_conf_var") or "PYTORCH_CUDA_ALLOC_CONF"
    out["sizes_bytes"] = {k: v for k, v in sizes.items() if v is not None}
    return out


def _host_oom(facts: dict[str, Any], text: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    n = None
    if facts.get("requested_bytes"):
        n = int(facts["requested_bytes"])
        out["requested"] = human_size(n)
    elif facts.get("requested"):
        n = parse_size(facts["requested"])
    if n is not None:
        out["requested_bytes"] = n
        # More than 16 TiB in one allocation is beyond any single host.
        out["absurd_size"] = n > 16 * 1024**4
    return out


def _device_side_assert(facts: dict[str, Any], text: str) -> dict[str, Any]:
    assertion = facts.get("assertion") or ""
    out: dict[str, Any] = {}
    if assertion:
        label = bool(re.search(r"n_classes|t >= 0|cur_target|target_val|n_class", assertion))
        index = bool(re.search(r"srcIndex|index out of bounds|idx_dim|ind >= 0|< sizes|indexSize", assertion))
        out["label_range"] = label
        out["index_range"] = index and not label
        out["assertion_hint"] = ("label outside [0, n_classes)" if label
                                 else "index out of range" if index else assertion[:80])
    return out


_DOUBLE = re.compile(r"(?i)^(?:double|float64|torch\.(?:cuda\.)?DoubleTensor|torch\.float64)$")
_LONG = re.compile(r"(?i)^(?:long|int64|torch\.(?:cuda\.)?LongTensor|torch\.int64|int|int32)$")
_FLOATISH = re.compile(r"(?i)^(?:float|float32|half|bfloat16|double|torch\.float\w*|c10::Half|c10::BFloat16)$")


def _dtype(facts: dict[str, Any], text: str) -> dict[str, Any]:
    a, b = str(facts.get("dtype_a") or ""), str(facts.get("dtype_b") or "")
    return {
        "double_input": bool(_DOUBLE.match(a)),
        "long_for_float": bool(_LONG.match(a) and _FLOATISH.match(b)),
        "float_for_long": bool(_FLOATISH.match(a) and _LONG.match(b)),
    }


def _inplace(facts: dict[str, Any], text: str) -> dict[str, Any]:
    if facts.get("version") and facts.get("expected"):
        return {"version_changes": int(facts["version"]) - int(facts["expected"])}
    return {}


# Arguments that hold layer parameters (F.linear/addmm: mat2 = weight.t(), bias; conv: weight).
_MODEL_SIDE = {"mat2", "weight", "bias", "vec"}
_BATCH_SIDE = {"mat1", "input", "index", "indices", "target", "other", "tensors", "mat"}


def _device(facts: dict[str, Any], text: str) -> dict[str, Any]:
    """Which side of a device mismatch is on the CPU: the model (weights) or the batch."""
    method = facts.get("method")
    out: dict[str, Any] = {"method_clause": f" (in {method})" if method else ""}
    argument = str(facts.get("argument") or "").lower()
    arg_device, other_device = str(facts.get("device_a") or "").lower(), str(facts.get("device_b") or "").lower()
    model_on_cpu = batch_on_cpu = False
    gpu = ""
    if facts.get("param_device") and facts.get("input_device"):
        model_on_cpu = str(facts["param_device"]).lower().startswith("cpu")
        batch_on_cpu = not model_on_cpu
        gpu = str(facts["input_device"] if model_on_cpu else facts["param_device"])
    elif facts.get("input_type") or facts.get("weight_type"):
        model_on_cpu = "cuda" in str(facts.get("input_type") or "").lower()
        batch_on_cpu = not model_on_cpu
        gpu = "cuda"
    elif arg_device.startswith("cpu") and other_device:
        gpu = other_device
        model_on_cpu, batch_on_cpu = argument in _MODEL_SIDE, argument not in _MODEL_SIDE
    elif other_device.startswith("cpu") and arg_device:
        gpu = arg_device
        model_on_cpu, batch_on_cpu = argument in _BATCH_SIDE, argument in _MODEL_SIDE
    if model_on_cpu or batch_on_cpu:
        out["model_on_cpu"], out["batch_on_cpu"] = model_on_cpu, batch_on_cpu
        out["gpu_device"] = "cuda" if gpu in ("gpu", "cuda", "") else gpu
        out["cpu_tensor"] = facts.get("argument") if arg_device.startswith("cpu") and argument else "the input"
    return out


_QUOTED = re.compile(r'"([^"]+)"')


def _checkpoint(facts: dict[str, Any], text: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    missing = unexpected = []
    found = re.search(r"Missing key\(s\) in state_dict: (.*?)(?:\.\s*$|\.\s*\n|$)", text, re.M | re.S)
    if found:
        missing = _QUOTED.findall(found.group(1).split("Unexpected key(s)")[0])
    found = re.search(r"Unexpected key\(s\) in state_dict: (.*?)(?:\.\s*$|\.\s*\n|$)", text, re.M | re.S)
    if found:
        unexpected = _QUOTED.findall(found.group(1))
    mismatches = re.findall(
        r"size mismatch for ([\w.]+): copying a param with shape (torch\.Size\(\[[^\]]*\]\)) from checkpoint, "
        r"the shape in current model is (torch\.Size\(\[[^\]]*\]\))", text)
    parts = []
    if missing:
        parts.append(f"{len(missing)} missing key{'s' * (len(missing) != 1)}")
        out["missing_sample"] = ", ".join(missing[:3])
    if unexpected:
        parts.append(f"{len(unexpected)} unexpected key{'s' * (len(unexpected) != 1)}")
        out["unexpected_sample"] = ", ".join(unexpected[:3])
    if mismatches:
        parts.append(f"{len(mismatches)} size mismatch{'es' * (len(mismatches) != 1)}")
        name, ckpt, model = mismatches[0]
        out.update(first_mismatch=name, ckpt_shape=ckpt.removeprefix("torch.Size(").removesuffix(")"),
                   model_shape=model.removeprefix("torch.Size(").removesuffix(")"))
    out.update(_key_mapping(missing, unexpected))
    out["size_mismatch"] = bool(mismatches)
    if parts:
        out["summary"] = ", ".join(parts)
    out["module_prefix"] = bool(unexpected) and all(k.startswith("module.") for k in unexpected)
    out["orig_mod_prefix"] = bool(unexpected) and all(k.startswith("_orig_mod.") for k in unexpected)
    out["truncated"] = bool(re.search(r"PytorchStreamReader failed|central directory|invalid load key", text))
    out["weights_only"] = "Weights only load failed" in text
    out["cuda_map"] = "deserialize object on" in text and "CUDA" in text
    out["details_keys"] = {"missing": missing, "unexpected": unexpected,
                           "size_mismatch": [m[0] for m in mismatches]}
    return out


def _key_mapping(missing: list[str], unexpected: list[str]) -> dict[str, Any]:
    """The prefix rewrite (added, removed or moved) that turns the checkpoint's unexpected
    keys into the model's missing keys, with the code that applies it."""
    if not missing or not unexpected:
        return {}
    wanted = set(missing)
    best: tuple[int, str, str] | None = None
    for candidate in missing[:50]:
        source = unexpected[0]
        old, new = _prefix_pair(source, candidate)
        if old is None:
            continue
        mapped = {new + k[len(old):] for k in unexpected if k.startswith(old)}
        hits = len(mapped & wanted)
        if best is None or hits > best[0]:
            best = (hits, old, new)
    if best is None or best[0] < max(1, min(len(missing), len(unexpected)))  or best[1] == best[2]:
        return {}
    hits, old, new = best
    if old and new:
        body = f'"{new}" + k[len("{old}"):] if k.startswith("{old}") else k'
    elif old:
        body = f'k.removeprefix("{old}")'
    else:
        body = f'"{new}" + k'
    code = (f"state = {{{body}: v for k, v in state.items()}}\n"
            "model.load_state_dict(state)  # strict: fails loudly if anything still differs")
    return {"remap": True, "remap_from": old or "(no prefix)", "remap_to": new or "(no prefix)",
            "remap_count": hits, "remap_code": code,
            "strict_false_loads_nothing": hits == len(missing) == len(unexpected)}


def _prefix_pair(source: str, target: str) -> tuple[str | None, str]:
    """('features.module.', 'module.features.') for 'features.module.0.weight' vs
    'module.features.0.weight': the longest common dotted suffix, and what precedes it."""
    a, b = source.split("."), target.split(".")
    common = 0
    while common < min(len(a), len(b)) and a[-1 - common] == b[-1 - common]:
        common += 1
    if common == 0:
        return None, ""
    old = ".".join(a[:len(a) - common])
    new = ".".join(b[:len(b) - common])
    return (old + "." if old else ""), (new + "." if new else "")


def _nccl(facts: dict[str, Any], text: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if facts.get("timeout_ms"):
        out["timeout_s"] = f"{int(facts['timeout_ms']) / 1000:g}"
    return out


def _dataloader(facts: dict[str, Any], text: str) -> dict[str, Any]:
    signal = str(facts.get("signal") or "")
    return {
        "shm": "Bus error" in signal or bool(re.search(r"shared memory|shm|bus error", text, re.I)),
        "timeout": facts.get("timeout"),
        "open_files": "Too many open files" in text,
    }


def _weights_only(facts: dict[str, Any], text: str) -> dict[str, Any]:
    """The class named in the message, spelled so that it can be allow-listed."""
    name = str(facts.get("global_name") or "").rstrip(".")
    if not name:
        return {}
    module, _, short = name.rpartition(".")
    if not module or module == "__main__":
        # Saved from a script: the loader needs its own class of that name in scope.
        return {"global_name": name, "safe_name": short or name, "from_main": module == "__main__",
                "import_line": f"from my_training_script import {short or name}  # wherever {short or name} is defined now"}
    top = module.split(".")[0]
    return {"global_name": name, "safe_name": name, "import_line": f"import {module}" if module != top else f"import {top}"}


_OOM_LIKE_CUDNN = {"NOT_INITIALIZED", "ALLOC_FAILED", "INTERNAL_ERROR", "MAPPING_ERROR"}


def _cudnn(facts: dict[str, Any], text: str) -> dict[str, Any]:
    status = str(facts.get("status_name") or "")
    return {"oom_like": status in _OOM_LIKE_CUDNN, "bad_param": status in ("BAD_PARAM", "NOT_SUPPORTED"),
            "execution_failed": status == "EXECUTION_FAILED"}


def _version_skew(facts: dict[str, Any], text: str) -> dict[str, Any]:
    module = str(facts.get("module") or "")
    return {"module_top": module.split(".")[0]} if module else {}


_HANDLERS: dict[str, Callable[[dict[str, Any], str], dict[str, Any]]] = {
    "cuda-oom": _cuda_oom,
    "host-oom": _host_oom,
    "device-side-assert": _device_side_assert,
    "dtype-mismatch": _dtype,
    "inplace-modification": _inplace,
    "device-mismatch": _device,
    "checkpoint-mismatch": _checkpoint,
    "distributed": _nccl,
    "dataloader-worker": _dataloader,
    "weights-only-load": _weights_only,
    "cudnn": _cudnn,
    "version-skew": _version_skew,
}
