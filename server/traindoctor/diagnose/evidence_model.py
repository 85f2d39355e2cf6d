"""A kind from the structure of the evidence, when no signature reads the message.

Signatures know wordings; a paste with an unknown wording, cut before its message, or with no
traceback still shows the exception's type, words of the torch/CUDA/NCCL vocabulary, the library
modules of its innermost frames and its log lines. This module observes those general features
(the vocabulary is data: rules/evidence/features.yaml) and ranks the kinds by a Bernoulli naive
Bayes whose counts are fitted on the labelled dev logs (rules/evidence/evidence_weights.yaml,
written by bench/fit_evidence_model.py, which also measures it by cross-validation within dev).
`other` is one of the kinds it ranks: healthy logs and logs without evidence stay `other`.
"""

from __future__ import annotations

import functools
import math
import re
from dataclasses import dataclass
from typing import Any

import yaml

from ..catalog import rules_dir
from .normalize import Line
from .parse import Chain

OTHER = "other"


@dataclass(frozen=True)
class Feature:
    id: str
    where: str  # type | message | frame | line
    pattern: re.Pattern[str]
    means: str


@dataclass(frozen=True)
class Ranked:
    """One kind with its probability and the observed features that favour it most."""

    kind: str
    probability: float
    supports: tuple[str, ...]
    features: tuple[str, ...]


@functools.cache
def _catalog() -> tuple[dict[str, Any], tuple[Feature, ...]]:
    data = yaml.safe_load((rules_dir() / "evidence" / "features.yaml").read_text(encoding="utf-8"))
    features = tuple(Feature(raw["id"], raw["where"], re.compile(raw["pattern"]), raw["means"])
                     for raw in data["features"])
    return data.get("settings") or {}, features


def _vocabulary() -> tuple[int, tuple[Feature, ...]]:
    settings, features = _catalog()
    return int(settings.get("innermost", 6)), features


def failure_shown(observed: dict[str, str]) -> bool:
    """Whether the paste shows a failure (settings.failure_shown of features.yaml) and evidence of
    its kind: a feature of the vocabulary that is not `generic` (message words alone never are)."""
    settings = _catalog()[0]
    generic = set(settings.get("generic", ()))
    # a frame in a library module or function the fitted model knows is evidence too (settings.evidence_tokens)
    tokens = tuple(f"word:{t}" for t in settings.get("evidence_tokens", ()))
    known = _weights().get("word_df") or {}
    return (any(feature in observed for feature in settings.get("failure_shown", ()))
            and any((f not in generic and f not in _SHAPE_MEANS and not f.startswith("word:"))
                    or (f.startswith(tokens) and f[5:] in known) for f in observed))


@functools.cache
def _weights() -> dict[str, Any]:
    path = rules_dir() / "evidence" / "evidence_weights.yaml"
    try:
        return yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except OSError:
        return {}


def alternatives_shown(observed: dict[str, str]) -> bool:
    """Whether the paste shows something (a frame, an error line, NCCL lines) whose ranked kinds
    are worth listing beside `other` (settings.alternatives_shown of features.yaml)."""
    return any(feature in observed for feature in _catalog()[0].get("alternatives_shown", ()))


def feature_ids() -> list[str]:
    return [f.id for f in _vocabulary()[1]]


def observe(lines: list[Line], chains: list[Chain]) -> dict[str, str]:
    """The features the paste shows: feature id -> the text that matched (first found)."""
    innermost, features = _vocabulary()
    types: list[str] = []
    messages: list[str] = []
    frames: list[str] = []
    stack: list[str] = []  # every frame of every traceback: which libraries the failure ran through
    inside: set[int] = set()
    shown_types = 0  # exception lines the paste prints (a type read from a `raise` line is not one)
    for chain in chains:
        frames.extend(f"{f.path} {f.function} {f.code or ''}" for f in chain.frames[-innermost:])
        stack.extend(f"{f.path} {f.function}" for f in chain.frames)
        for block in chain.blocks:
            inside.update(range(block.start, block.end))
            if block.exception is not None:
                types.append(block.exception.type)
                messages.append(block.exception.message)
                shown_types += 1
        raised = _RAISE_LINE.match((chain.frames[-1].code or "").strip()) if chain.frames else None
        if raised is not None and (chain.final is None or chain.final.exception is None):
            # cut before its message, on the library's own `raise X(...)`: the type is that X
            types.append(raised.group("type"))
            if raised.group("text"):
                messages.append(raised.group("text"))
    outside = [line.text for i, line in enumerate(lines) if i not in inside]
    settings = _catalog()[0]
    error_line = re.compile(settings.get("error_line", r"(?!)"))
    warning_line = re.compile(settings.get("warning_line", r"(?!)"))
    errors = [text for text in outside if error_line.search(text) and not warning_line.search(text)]
    # a log with no traceback and no error line: a warning is the only message it has, and one that
    # speaks the failure vocabulary (a non-finite norm, no NVIDIA driver) is evidence of a kind
    warning_message = re.compile(settings.get("warning_message", r"(?!)"))
    warnings = [text for text in outside if warning_message.search(text)] if not chains and not errors else []
    texts = {"type": types, "message": messages + errors + warnings, "frame": list(reversed(frames)),
             "line": outside, "stack": stack}
    found: dict[str, str] = {}
    for feature in features:
        for text in texts.get(feature.where, ()):
            match = feature.pattern.search(text)
            if match is not None:
                found[feature.id] = match.group(0)
                break
    # the shape of the paste itself
    if any(chain.frames for chain in chains):
        found["shape-traceback"] = "a traceback"
        if not shown_types:
            found["shape-cut"] = "the traceback stops before its exception line"
    elif shown_types:
        found["shape-message-only"] = "an exception line without frames"
    else:
        found["shape-log-only"] = "a log with no traceback"
    if errors:
        found["shape-error-line"] = errors[0]
    if warnings and any(f.startswith("msg-") for f in found):
        found["shape-warning-line"] = warnings[0]
    boilerplate = re.compile(settings.get("boilerplate", r"(?!)"))
    for text in [*messages, *errors]:
        for word in _WORD.findall(boilerplate.sub(" ", text)):
            found.setdefault(f"word:{word.lower()}", word)
    # counted like the message's words: the module and function of each traceback's innermost frame in
    # an installed library (where it failed, whatever the wording; one frame, not the stack, so that
    # the frames of one failure are not counted as many pieces of evidence)
    for chain in chains:
        for frame in reversed(chain.frames[-innermost:]):
            module = _LIBRARY_MODULE.search(frame.path.replace("\\", "/"))
            if module is None:
                continue
            parts = [p for p in module.group("module").split("/") if p and p != "__init__"]
            found.setdefault(f"word:lib={'.'.join(parts)}", frame.path)
            if frame.function.isidentifier():
                found.setdefault(f"word:fn={frame.function}", f"{'.'.join(parts)}.{frame.function}")
            break
    return found


def ordinary_error(lines: list[Line], chains: list[Chain]) -> str | None:
    """The type of the exception a cut paste lost, when the paste still names it (a notebook's
    header, `FileNotFoundError   Traceback (most recent call last)`, or a library's own `raise X(`
    line as the innermost frame) and it is a type no training kind explains (settings.ordinary_types
    of features.yaml: a missing file, an undefined name): the paste is an ordinary Python error."""
    if not chains or any(block.exception is not None for chain in chains for block in chain.blocks):
        return None
    ordinary = set(_catalog()[0].get("ordinary_types", ()))
    named = [header.group("type") for line in lines if (header := _NOTEBOOK_HEADER.match(line.text))]
    for chain in chains:
        raised = _RAISE_LINE.match((chain.frames[-1].code or "").strip()) if chain.frames else None
        if raised is not None:
            named.append(raised.group("type"))
    return next((name for name in named if name in ordinary), None)


_NOTEBOOK_HEADER = re.compile(r"\s*(?:[\w.]+\.)?(?P<type>[A-Z]\w*(?:Error|Exception))\s+Traceback \(most recent call last\)")
_RAISE_LINE = re.compile(r"raise (?:[\w.]+\.)?(?P<type>[A-Z]\w*(?:Error|Exception|Failed|Exit|Unsupported))\b"
                         r"(?:\(\s*[rfbu]?[\"'](?P<text>[^\"']*))?")
_LIBRARY_MODULE = re.compile(r".*(?:site-packages|dist-packages|lib/python\d(?:\.\d+)?)/(?P<module>[\w/.-]+?)\.py$")
_WORD = re.compile(r"[A-Za-z_][A-Za-z_]{2,}")  # the words of a message, for the fitted word counts


_SHAPE_MEANS = {"shape-traceback": "the paste has a traceback",
                "shape-cut": "the traceback stops before its exception line (the message is missing)",
                "shape-message-only": "the paste has an exception line but no frames",
                "shape-log-only": "the paste is a log with no traceback",
                "shape-error-line": "a log line reports an error",
                "shape-warning-line": "a warning of a log without a traceback speaks of a failure"}


def shape_features() -> list[str]:
    return list(_SHAPE_MEANS)


def rank(observed: dict[str, str], weights: dict[str, Any] | None = None) -> list[Ranked]:
    """The kinds, most probable first, for the observed features (empty without fitted weights)."""
    weights = weights if weights is not None else _weights()
    kinds: dict[str, dict[str, Any]] = weights.get("kinds") or {}
    if not kinds:
        return []
    alpha = float(weights.get("alpha", 0.5))
    # shrink > 0: a kind's rate of a feature is drawn towards the rate over all items (an m-estimate),
    # so that a feature or word a small kind never showed counts against it, not for it (add-alpha
    # smoothing pulls a small kind's rates towards 1/2, which made every rare word evidence for it)
    shrink = float(weights.get("shrink", 0.0))
    temperature = float(weights.get("temperature", 1.0))
    vocabulary = [*feature_ids(), *shape_features()]
    total = sum(int(k["n"]) for k in kinds.values())
    feature_total = _feature_totals(kinds)
    # message words: only the present ones count (most of the vocabulary is absent from a message),
    # each by how much more often items of the kind show it than all items do
    word_df: dict[str, int] = weights.get("word_df") or {}
    word_scale = float(weights.get("word_scale", 0.0))
    words = [w for w in observed if w.startswith("word:") and w[5:] in word_df]
    scores: dict[str, float] = {}
    ratios: dict[str, list[tuple[float, str]]] = {}

    def rate(count: int, n: int, overall: float) -> float:
        if shrink > 0:
            return (count + shrink * overall) / (n + shrink)
        return (count + alpha) / (n + 2 * alpha)

    unseen = _unseen(observed)
    for kind, fitted in kinds.items():
        n = int(fitted["n"])
        counts = fitted.get("features") or {}
        score = math.log((n + alpha) / (total + alpha * len(kinds)))
        for feature in vocabulary:
            base = (feature_total.get(feature, 0) + alpha) / (total + 2 * alpha)
            theta = rate(int(counts.get(feature, 0)), n, base)
            if feature in observed:
                score += math.log(theta)
                ratios.setdefault(kind, []).append((math.log(theta / base), feature))
            elif feature not in unseen:  # absent, not merely out of the paste's sight
                score += math.log(1 - theta)
        kind_words = fitted.get("words") or {}
        for word in words:
            base = (int(word_df[word[5:]]) + alpha) / (total + 2 * alpha)
            ratio = math.log(rate(int(kind_words.get(word[5:], 0)), n, base) / base)
            score += word_scale * ratio
            ratios.setdefault(kind, []).append((word_scale * ratio, word))
        scores[kind] = score / temperature
    top = max(scores.values())
    norm = sum(math.exp(s - top) for s in scores.values())
    out = []
    for kind, score in sorted(scores.items(), key=lambda item: -item[1]):
        favouring = [f for ratio, f in sorted(ratios.get(kind, []), reverse=True) if ratio > 0][:3]
        out.append(Ranked(kind, math.exp(score - top) / norm, tuple(_means(f, observed) for f in favouring),
                          tuple(favouring)))
    return out


def _unseen(observed: dict[str, str]) -> set[str]:
    """The features this paste could not show whatever its failure was (settings.unseen of
    features.yaml: a traceback cut before its exception line has no message to read). Their absence
    is no evidence against a kind whose failures show them, so it is not counted."""
    settings, features = _catalog()
    where = {w for shape, wheres in (settings.get("unseen") or {}).items() if shape in observed for w in wheres}
    return {f.id for f in features if f.where in where}


def _feature_totals(kinds: dict[str, dict[str, Any]]) -> dict[str, int]:
    totals: dict[str, int] = {}
    for fitted in kinds.values():
        for feature, count in (fitted.get("features") or {}).items():
            totals[feature] = totals.get(feature, 0) + int(count)
    return totals


def _means(feature_id: str, observed: dict[str, str]) -> str:
    if feature_id.startswith("word:lib="):
        return f"the innermost library frame is in the module {feature_id[9:]}"
    if feature_id.startswith("word:fn="):
        return f"the innermost library frame is the function {observed.get(feature_id, feature_id[8:])}"
    if feature_id.startswith("word:"):
        return f"the message has the word `{observed.get(feature_id, feature_id[5:])}`"
    if feature_id in _SHAPE_MEANS:
        return _SHAPE_MEANS[feature_id]
    feature = next(f for f in _vocabulary()[1] if f.id == feature_id)
    match = " ".join(observed.get(feature_id, "").split())
    return feature.means.replace("{match}", match[:80])
