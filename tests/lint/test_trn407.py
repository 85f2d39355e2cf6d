"""TRN407 bce-on-sigmoid: one finding per loss object, every other call as a related
location, in the engine, the CLI's JSON and SARIF (the LSP's relatedInformation is in
tests/lsp/test_diagnostics.py); and the rule's claim about the gradient, on torch."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import torch

from traindoctor.lint import lint_source

FIXTURE = Path(__file__).parent / "gan_bce_fixture.py"
SOURCE = FIXTURE.read_text()
LINES = SOURCE.splitlines()


def line_of(needle: str) -> int:
    """0-based line of the one line holding `needle`."""
    [index] = [i for i, line in enumerate(LINES) if needle in line]
    return index


def test_one_finding_per_loss_object_with_every_call_related():
    findings = [f for f in lint_source(SOURCE, str(FIXTURE)).findings if f.code == "TRN407"]
    assert [(f.range.start.line, f.name) for f in findings] == [
        (line_of("# first call of adversarial_loss"), "bce-on-sigmoid"),
        (line_of("# first call of auxiliary_loss"), "bce-on-sigmoid"),
    ]
    adversarial, auxiliary = findings
    assert {(r.range.start.line, r.message) for r in adversarial.related} == {
        (line_of("adversarial_loss = torch.nn.BCELoss()"), "the loss object is built here"),
        (line_of("real_loss = adversarial_loss("), "the same loss object is called on sigmoid outputs here"),
        (line_of("fake_loss = adversarial_loss("), "the same loss object is called on sigmoid outputs here"),
    }
    # the classifier is a module-level Sequential ending in Sigmoid: the model sees where the
    # sigmoid output comes from and names it too (the discriminator is a class: no such origin)
    assert {(r.range.start.line, r.message) for r in auxiliary.related} == {
        (line_of("classifier = nn.Sequential("), "the sigmoid output passed to BCE"),
        (line_of("auxiliary_loss = torch.nn.BCELoss()"), "the loss object is built here"),
        (line_of("aux = auxiliary_loss("), "the same loss object is called on sigmoid outputs here")}
    assert adversarial.message.endswith("(2 more places in related locations)")
    assert auxiliary.message.endswith("(1 more place in related locations)")
    assert not any(f.code == "TRN402" for f in lint_source(SOURCE, str(FIXTURE)).findings)


def test_a_functional_call_has_no_loss_object_and_stays_one_finding_per_call():
    source = ("import torch\nimport torch.nn.functional as F\n"
              "a = F.binary_cross_entropy(torch.sigmoid(z), y)\nb = F.binary_cross_entropy(torch.sigmoid(w), y)\n")
    assert [f.range.start.line for f in lint_source(source).findings if f.code == "TRN407"] == [2, 3]


def _check(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "traindoctor", "check", *args], capture_output=True, text=True,
                          timeout=120, cwd=FIXTURE.parent)


def test_json_and_sarif_carry_the_related_calls():
    as_json = json.loads(_check("--format", "json", "--select", "TRN407", FIXTURE.name).stdout)
    assert len(as_json) == 2
    assert [r["line"] for r in as_json[0]["related"]] == sorted(
        n + 1 for n in (line_of("adversarial_loss = torch.nn.BCELoss()"), line_of("real_loss = adversarial_loss("),
                        line_of("fake_loss = adversarial_loss(")))
    sarif = json.loads(_check("--format", "sarif", "--select", "TRN407", FIXTURE.name).stdout)
    results = sarif["runs"][0]["results"]
    assert len(results) == 2
    related = results[0]["relatedLocations"]
    assert [r["physicalLocation"]["region"]["startLine"] for r in related] == [r["line"] for r in as_json[0]["related"]]
    assert all(r["message"]["text"] for r in related)


def test_the_rules_claim_holds_on_torch():
    """A saturated wrong prediction: BCELoss on sigmoid gives no gradient at all (its log is
    clamped at -100); BCEWithLogitsLoss on the logits gives sigmoid(x) - y."""
    assert torch.sigmoid(torch.tensor(17.0)).item() == 1.0
    z = torch.tensor([20.0], requires_grad=True)
    target = torch.zeros(1)
    loss = torch.nn.BCELoss()(torch.sigmoid(z), target)
    loss.backward()
    assert loss.item() == 100.0 and z.grad.item() == 0.0
    logits = torch.tensor([20.0], requires_grad=True)
    torch.nn.BCEWithLogitsLoss()(logits, target).backward()
    assert abs(logits.grad.item() - 1.0) < 1e-6
