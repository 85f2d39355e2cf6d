"""TRN102: a model frozen before the evaluation runs records no graph, wherever the freeze is: in the
function that evaluates it, or in every caller that passes it (zylo117/Yet-Another-EfficientDet-Pytorch
coco_eval.py, ecosystem dev, judged fp: the `__main__` block calls `model.requires_grad_(False)` and
`model.eval()` before `evaluate_coco(..., model)`). A freeze counts when it runs whenever the call does:
in the block that holds the call (an `if` both sit in), not in a sibling `if` before it. Checked on
torch: the frozen model's outputs hold no graph."""

from __future__ import annotations

import textwrap

import torch
from torch import nn
from project_helpers import run_check

EVALUATE = '''\
    import torch
    from torch import nn


    def evaluate(model, batches):
        outputs = []
        for x in batches:
            outputs.append(model(x))
        return outputs

'''

CALLER_FREEZES = EVALUATE + '''
    if __name__ == "__main__":
        if torch.__version__:
            model = nn.Linear(4, 2)
            model.requires_grad_(False)
            model.eval()
            evaluate(model, [torch.randn(3, 4)])
'''

SIBLING_IF = EVALUATE + '''
    if __name__ == "__main__":
        model = nn.Linear(4, 2)
        if torch.__version__ == "0":
            model.requires_grad_(False)
        model.eval()
        evaluate(model, [torch.randn(3, 4)])
'''

ONE_CALLER_OF_TWO = CALLER_FREEZES + '''
    def report(batches):
        model = nn.Linear(4, 2)
        model.eval()
        return evaluate(model, batches)
'''

SAME_BLOCK = '''\
    import torch
    from torch import nn


    def evaluate(model, batches, frozen):
        model.eval()
        outputs = []
        if frozen:
            model.requires_grad_(False)
            for x in batches:
                outputs.append(model(x))
        return outputs
'''


def _lines(tmp_path, source):
    path = tmp_path / "program.py"
    path.write_text(textwrap.dedent(source))
    return [f["line"] for f in run_check(path, "TRN102")]


def test_every_caller_freezes_the_model_before_the_call(tmp_path):
    assert _lines(tmp_path, CALLER_FREEZES) == []
    namespace: dict = {}
    exec(compile(textwrap.dedent(EVALUATE), "program.py", "exec"), namespace)
    model = nn.Linear(4, 2).requires_grad_(False).eval()
    assert all(out.grad_fn is None for out in namespace["evaluate"](model, [torch.randn(3, 4)]))
    assert all(out.grad_fn is not None for out in namespace["evaluate"](nn.Linear(4, 2).eval(), [torch.randn(3, 4)]))


def test_a_freeze_in_the_block_that_holds_the_loop_counts(tmp_path):
    assert _lines(tmp_path, SAME_BLOCK) == []


def test_a_freeze_in_a_sibling_if_or_in_one_caller_only_does_not(tmp_path):
    assert _lines(tmp_path, SIBLING_IF) == [8]
    assert _lines(tmp_path, ONE_CALLER_OF_TWO) == [8]
