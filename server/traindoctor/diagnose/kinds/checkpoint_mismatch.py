"""Hooks of the `checkpoint-mismatch` kind (rules/signatures/*.yaml with kind: checkpoint-mismatch).

`derive`: the missing, unexpected and size-mismatched keys, and the prefix rewrite that maps them.
`refine`: the key lists go to details["state_dict"].
"""

from __future__ import annotations

import re
from typing import Any

from . import Failure


_QUOTED = re.compile(r'"([^"]+)"')


def derive(facts: dict[str, Any], text: str) -> dict[str, Any]:
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
    if not mismatches and bool(missing) != bool(unexpected):
        # Keys on one side only, all under one submodule: a module one of the two lacks.
        module = _common_module(missing or unexpected)
        if module:
            out["missing_module" if missing else "extra_module"] = module
    out["size_mismatch"] = bool(mismatches)
    if parts:
        out["summary"] = ", ".join(parts)
    out["module_prefix"] = bool(unexpected) and all(k.startswith("module.") for k in unexpected)
    out["orig_mod_prefix"] = bool(unexpected) and all(k.startswith("_orig_mod.") for k in unexpected)
    out["truncated"] = bool(re.search(r"PytorchStreamReader failed|central directory|invalid load key|Unable to load weights from pytorch checkpoint|unexpected pos", text))
    out["weights_only"] = "Weights only load failed" in text
    out["cuda_map"] = "deserialize object on" in text and "CUDA" in text
    out["details_keys"] = {"missing": missing, "unexpected": unexpected,
                           "size_mismatch": [m[0] for m in mismatches]}
    return out


def _common_module(keys: list[str]) -> str | None:
    """The first dotted component every key shares (`graph_proposal_net`), unless that is a DDP or
    torch.compile wrapper's prefix, which the prefix facts explain."""
    heads = {key.split(".", 1)[0] for key in keys if "." in key}
    if len(heads) != 1 or len(keys) < 2 or any("." not in key for key in keys):
        return None
    head = heads.pop()
    return None if head in ("module", "_orig_mod") else head


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


def refine(failure: Failure) -> None:
    if "details_keys" in failure.facts:
        failure.details["state_dict"] = failure.facts.pop("details_keys")
