"""TRN301 padding-in-loss on whole training scripts, and proof with real torch
that the finding is a real metric error and the fix removes it."""

from __future__ import annotations

from pathlib import Path

import torch
import torch.nn.functional as F
from torch.nn.utils.rnn import pad_sequence

from casefiles import CONFIG

from traindoctor.lint import fix_source, lint_source

CASES = Path(__file__).parent / "cases"
CODES = ("TRN301",)


def test_finding_points_at_constructor_and_names_pad_value():
    source = (CASES / "trn3xx_seq2seq_padded.py").read_text(encoding="utf-8")
    [finding] = [f for f in lint_source(source, "case.py", CONFIG).findings if f.code == "TRN301"]
    line = source.splitlines()[finding.range.start.line]
    assert line[finding.range.start.column:finding.range.end.column] == "nn.CrossEntropyLoss()"
    assert "`0`" in finding.message
    assert finding.fix is not None and finding.fix.safe
    assert any("padded" in r.message for r in finding.related)


def test_mismatched_ignore_index_is_replaced():
    source = (
        "import torch.nn as nn\nfrom torch.nn.utils.rnn import pad_sequence\n"
        "class LM(nn.Module):\n"
        "    def __init__(self):\n        super().__init__()\n"
        "        self.criterion = nn.CrossEntropyLoss(ignore_index=-100)\n"
        "    def loss(self, logits, batch):\n"
        "        labels = pad_sequence(batch, batch_first=True, padding_value=2)\n"
        "        return self.criterion(logits.view(-1, logits.size(-1)), labels.view(-1))\n"
    )
    [finding] = [f for f in lint_source(source, "m.py", CONFIG).findings if f.code == "TRN301"]
    assert finding.range.start.line == 5
    fixed, _ = fix_source(source, "m.py", CONFIG)
    assert "nn.CrossEntropyLoss(ignore_index=2)" in fixed


def test_ambiguous_pad_value_gets_no_safe_fix():
    source = (
        "import torch.nn.functional as F\n"
        "def step(model, tok, cfg, texts):\n"
        "    enc = tok(texts, padding=True, return_tensors='pt')\n"
        "    emb_pad = cfg.pad_token_id\n"
        "    logits = model(enc['input_ids'])\n"
        "    return F.cross_entropy(logits.view(-1, logits.size(-1)), enc['input_ids'].view(-1))\n"
    )
    [finding] = [f for f in lint_source(source, "m.py", CONFIG).findings if f.code == "TRN301"]
    assert finding.fix is not None and not finding.fix.safe


def test_padding_really_changes_the_loss_and_ignore_index_restores_it():
    """What the rule is about, measured: the same predictions score differently
    depending on how much padding the batch has, unless ignore_index is the pad."""
    torch.manual_seed(0)
    vocab, pad = 11, 0
    sequences = [torch.randint(1, vocab, (n,)) for n in (3, 9)]
    targets = pad_sequence(sequences, batch_first=True)  # padding_value 0, like the fixture
    logits = torch.randn(targets.shape[0], targets.shape[1], vocab)
    logits[..., pad] += 8.0  # a model that has learned to predict padding

    real = torch.cat([F.cross_entropy(logits[i, : len(s)], s, reduction="sum").unsqueeze(0)
                      for i, s in enumerate(sequences)]).sum() / sum(len(s) for s in sequences)
    naive = F.cross_entropy(logits.view(-1, vocab), targets.view(-1))
    fixed = F.cross_entropy(logits.view(-1, vocab), targets.view(-1), ignore_index=pad)
    assert naive < real * 0.8, "padding makes the loss look better than it is"
    assert torch.allclose(fixed, real)
