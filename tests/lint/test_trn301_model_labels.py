"""TRN301 on the `labels` a transformers model takes: its loss is CrossEntropyLoss with the
default ignore_index -100, so labels copied from token ids the tokenizer padded score the
padding (the instruction-tuning bug of many fine-tuning scripts). Quiet when the file maps the
padded positions to -100, lets a collator rewrite the labels, or computes its own loss with an
`ignore_index=`."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from casefiles import CONFIG

from traindoctor.lint import lint_source

HEAD = '''import torch
import transformers

tokenizer = transformers.AutoTokenizer.from_pretrained("gpt2")
'''

PROMPT_MASKED_ONLY = HEAD + '''

def tokenize(point):
    prompt_len = len(tokenizer(point["prompt"])["input_ids"])
    ids = tokenizer(point["prompt"] + point["answer"], truncation=True, max_length=256,
                    padding="max_length")["input_ids"]
    return {"input_ids": ids, "labels": [-100] * prompt_len + ids[prompt_len:]}
'''

COPIED = HEAD + '''

def tokenize(batch):
    out = tokenizer(batch["text"], padding="max_length", truncation=True, max_length=128)
    out["labels"] = out["input_ids"].copy()
    return out
'''


def _lines(source: str) -> list[int]:
    return [f.range.start.line + 1 for f in lint_source(source, "case.py", CONFIG).findings if f.code == "TRN301"]


def test_padding_counts_in_the_loss_a_model_computes_from_labels():
    """What the finding claims, in torch: cross entropy with the default ignore_index (what the
    models compute from `labels`) averages the pad positions in; -100 there takes them out."""
    torch.manual_seed(0)
    logits = torch.randn(1, 6, 10)
    real, pad = torch.tensor([[3, 4, 5]]), 0
    labels = torch.cat([real, torch.full((1, 3), pad)], dim=1)
    scored = F.cross_entropy(logits.view(-1, 10), labels.view(-1))
    masked = labels.masked_fill(labels == pad, -100)
    honest = F.cross_entropy(logits.view(-1, 10), masked.view(-1))
    assert torch.isclose(honest, F.cross_entropy(logits[0, :3], real[0]))
    assert not torch.isclose(scored, honest)


@pytest.mark.parametrize("source, line", [(PROMPT_MASKED_ONLY, 11), (COPIED, 9)])
def test_labels_from_padded_token_ids_are_reported(source: str, line: int):
    assert _lines(source) == [line]


@pytest.mark.parametrize("change", [
    # the padded positions mapped to -100
    ('ids[prompt_len:]}', '[t if t != tokenizer.pad_token_id else -100 for t in ids[prompt_len:]]}'),
    # not padded at all (a collator pads later)
    ('padding="max_length"', 'padding=False'),
    # a collator that rebuilds the labels with -100 at the padding
    ('    return {', '    collator = transformers.DataCollatorForLanguageModeling(tokenizer, mlm=False)\n    return {'),
    # the file's own loss decides what to skip
    ('    return {', '    loss_fn = torch.nn.CrossEntropyLoss(ignore_index=tokenizer.pad_token_id)\n    return {'),
])
def test_quiet_when_padding_is_not_scored(change):
    assert _lines(PROMPT_MASKED_ONLY.replace(*change)) == []


def test_labels_masked_by_the_attention_mask_are_quiet():
    source = COPIED.replace('    out["labels"] = out["input_ids"].copy()\n',
                            '    labels = torch.tensor(out["input_ids"])\n'
                            '    labels[torch.tensor(out["attention_mask"]) == 0] = -100\n'
                            '    out["labels"] = labels\n')
    assert _lines(source) == []


def test_without_transformers_a_labels_key_is_not_a_model_s_target():
    assert _lines(COPIED.replace("import transformers\n", "import mylib as transformers\n")) == []


def test_padding_overwritten_with_another_module_s_constant_is_quiet():
    """`labels[labels == pad] = DST.LABEL_PAD` (-100 in another file): the file cannot read the
    value, and a rewrite of exactly the padded positions is the fix, so it stays quiet."""
    source = COPIED.replace("import transformers\n", "import transformers\nimport consts\n").replace(
        '    out["labels"] = out["input_ids"].copy()\n',
        '    labels = torch.tensor(out["input_ids"])\n'
        '    labels[labels == tokenizer.pad_token_id] = consts.LABEL_PAD\n'
        '    out["labels"] = labels\n')
    assert _lines(source) == []
    assert _lines(source.replace("consts.LABEL_PAD", "0")) == [12]
