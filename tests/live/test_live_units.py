"""Pure pieces of live diagnosis: DAP text, probe decoding, command parsing, enrichment."""

from __future__ import annotations

import ast
import json
import sys

import pytest

from traindoctor.cli.run import is_loopback, parse_address
from traindoctor.live.enrich import enrich
from traindoctor.live.from_dap import diagnose_probes, parse_probe_results, traceback_text
from traindoctor.live.launcher import LaunchError, parse_command
from traindoctor.live.probes import parse_result, probe_expressions
from traindoctor.model import Diagnosis, ExceptionInfo, ProbeResult, Probes, TensorSummary

# debugpy's exceptionInfo.details.stackTrace for a chained failure (captured from 1.8.22):
# frames deepest first, no headers, the paused frame marked.
DEBUGPY_STACK = (
    '  File "/tmp/chain.py", line 4, in load\n    return sd["missing"]\n           ~~^^^^^^^^^^^\n'
    "KeyError: 'missing'\n\nThe above exception was the direct cause of the following exception:\n\n"
    '  File "/tmp/chain.py", line 6, in load\n    raise RuntimeError("checkpoint broken") from e\n'
    '  File "/tmp/chain.py", line 7, in <module> (Current frame)\n    load({})\n'
    "RuntimeError: checkpoint broken\n"
)


def test_debugpy_stack_text_becomes_a_python_traceback():
    text = traceback_text({"details": {"stackTrace": DEBUGPY_STACK}})
    assert text == (
        "Traceback (most recent call last):\n"
        '  File "/tmp/chain.py", line 4, in load\n    return sd["missing"]\n           ~~^^^^^^^^^^^\n'
        "KeyError: 'missing'\n\nThe above exception was the direct cause of the following exception:\n\n"
        "Traceback (most recent call last):\n"
        '  File "/tmp/chain.py", line 7, in <module>\n    load({})\n'
        '  File "/tmp/chain.py", line 6, in load\n    raise RuntimeError("checkpoint broken") from e\n'
        "RuntimeError: checkpoint broken\n"
    )


def test_traceback_without_stack_falls_back_to_the_exception():
    info = {"exceptionId": "ValueError       (note: full exception trace is shown but execution is paused at: f)",
            "description": "bad"}
    assert traceback_text(info) == "Traceback (most recent call last):\nValueError: bad\n"


@pytest.mark.parametrize("value", [{"a": "quote ' and \" and \\ and \n"}, [1, 2.5, None], "text", None])
def test_probe_results_decode_debugpy_reprs(value):
    assert parse_result(repr(json.dumps(value))) == value


def test_probe_failures_are_recorded_not_raised():
    results = parse_probe_results({
        "env": {"result": repr(json.dumps({"python": "3.11"}))},
        "tensors": {"error": "timed out"},
        "modules": {"result": "Traceback (most recent call last):\nNameError: name 'torch' is not defined"},
        "optimizers": {"result": "'{\"cut"},  # truncated by the adapter
        "traceback": "connection closed",
    })
    by_name = {r.name: r for r in results}
    assert by_name["env"] == ProbeResult("env", ok=True, value={"python": "3.11"})
    assert by_name["tensors"].error == "timed out"
    assert by_name["modules"].error == "NameError: name 'torch' is not defined"
    assert not by_name["optimizers"].ok and "truncated" in by_name["optimizers"].error
    assert by_name["traceback"].error == "connection closed"


def test_probe_expressions_are_single_expressions():
    probes = probe_expressions()
    assert {p["name"] for p in probes} >= {"env", "tensors", "modules", "optimizers", "cuda_memory_summary"}
    for probe in probes:
        ast.parse(probe["expression"], mode="eval")  # `context: "watch"` evaluates, never executes
        assert "random" not in probe["expression"] and "print(" not in probe["expression"]


def test_probes_evaluated_here_read_a_frame_without_changing_it():
    import torch

    def frame():
        torch.manual_seed(0)
        weights = torch.randn(3, 2, requires_grad=True)
        broken = torch.tensor([1.0, float("nan"), float("inf")])
        step, note, lr = 7, "x" * 100, float("nan")
        model = torch.nn.Linear(2, 2)
        optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
        state_before = torch.get_rng_state()
        namespace = dict(globals(), **locals())
        namespace["globals"] = lambda: globals()
        out = {}
        for probe in probe_expressions():
            out[probe["name"]] = json.loads(eval(probe["expression"], namespace))
        assert torch.equal(torch.get_rng_state(), state_before)
        assert weights._version == 0 and broken._version == 0
        return out

    out = frame()
    names = {t["name"]: t for t in out["tensors"]}
    assert names["broken"]["nan_count"] == 1 and names["broken"]["inf_count"] == 1
    assert names["broken"]["max"] == 1.0  # min/max/mean over the finite values
    assert names["weights"]["requires_grad"] is True and names["weights"]["shape"] == [3, 2]
    assert out["modules"][0]["params"] == 6 and out["modules"][0]["layers"] == []
    assert out["optimizers"][0]["type"] == "Adam" and out["optimizers"][0]["lr"] == [0.01]
    assert out["env"]["torch"] == torch.__version__
    assert out["cuda_memory_summary"] is None  # CUDA never initialised here
    scalars = {v["name"]: v["value"] for v in out["scalars"]}
    assert scalars["step"] == 7 and scalars["note"] == "x" * 80 and scalars["lr"] == "nan"


def test_commands_become_debugpy_commands(tmp_path):
    script = tmp_path / "train.py"
    script.write_text("")
    command = parse_command([sys.executable, "-u", "-X", "dev", str(script), "--lr", "1"])
    assert command.argv("127.0.0.1", 5678) == [
        sys.executable, "-u", "-X", "dev", "-m", "debugpy", "--listen", "127.0.0.1:5678", "--wait-for-client",
        str(script), "--lr", "1",
    ]
    assert parse_command([sys.executable, "-m", "pkg.train", "-x"]).target == ("-m", "pkg.train", "-x")
    assert parse_command(["torchrun", "--nproc-per-node", "2", "t.py"]).target == (
        "-m", "torch.distributed.run", "--nproc-per-node", "2", "t.py")
    assert parse_command([str(script)]).python == sys.executable
    for bad in ([], ["bash", "x"], [sys.executable], [sys.executable, "-c"], [sys.executable, "missing.py"]):
        with pytest.raises(LaunchError):
            parse_command(bad)


def test_addresses_and_loopback():
    assert parse_address("5678") == ("127.0.0.1", 5678)
    assert parse_address("localhost:5678") == ("localhost", 5678)
    assert parse_address("[::1]:5678") == ("::1", 5678)
    for bad in ("x:y", "1:70000", "host:"):
        with pytest.raises(ValueError):
            parse_address(bad)
    assert is_loopback("127.0.0.2") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("10.0.0.1") and not is_loopback("example.com")


def _diagnosis(kind: str, message: str) -> Diagnosis:
    return Diagnosis(kind, "crash", "t", "cause.", (), (), 0.9, None, (), ExceptionInfo("RuntimeError", message))


def test_cuda_oom_memory_arithmetic():
    gib = 1 << 30
    probes = Probes(results=(
        ProbeResult("modules", True, [
            {"name": "model", "param_bytes": 2 * gib, "grad_bytes": 2 * gib, "buffer_bytes": 0},
            {"name": "model.encoder", "param_bytes": gib, "grad_bytes": gib, "contained_in": "model"},
        ]),
        ProbeResult("optimizers", True, [{"name": "opt", "state_bytes": 4 * gib}]),
        ProbeResult("env", True, {"cuda_memory": {"allocated": 30 * gib, "reserved": 34 * gib, "free": gib,
                                                  "total": 40 * gib}}),
        ProbeResult("cuda_memory_summary", True, "|  summary  |"),
    ))
    result = enrich(_diagnosis("cuda-oom", "CUDA out of memory."), probes)
    memory = result.details["memory"]
    assert memory["model_total"] == 8 * gib  # the nested encoder is not counted twice
    assert memory["activations_and_other"] == 22 * gib
    assert memory["summary"] == "|  summary  |"
    assert "Model memory: parameters 2.00 GiB + gradients 2.00 GiB + buffers 0 B + optimizer state 4.00 GiB = " \
           "8.00 GiB." in result.evidence
    assert "Activations and other tensors: about 22.00 GiB of the allocated memory." in result.evidence


def test_inplace_and_device_evidence_name_the_tensors():
    tensors = (
        TensorSummary("gate", (10, 5), "float32", "cpu", version=1),
        TensorSummary("hidden", (10, 5), "float32", "cpu", version=0),
        TensorSummary("labels", (10,), "int64", "cuda:0"),
    )
    message = ("one of the variables needed for gradient computation has been modified by an inplace operation: "
               "[torch.FloatTensor [10, 5]], which is output 0 of SigmoidBackward0, is at version 1; expected "
               "version 0 instead.")
    result = enrich(_diagnosis("inplace-modification", message), Probes(tensors=tensors, rank=3))
    assert "Tensor `gate` (10, 5) float32 on cpu is at version 1 (modified in place)." in result.evidence
    assert "`hidden`" not in " ".join(result.evidence)
    assert result.rank == 3
    devices = enrich(_diagnosis("device-mismatch", "Expected all tensors to be on the same device"),
                     Probes(tensors=tensors))
    assert "the frame mixes devices" in devices.root_cause
    assert "On device cuda:0: `labels`." in devices.evidence


def test_unrecognised_failures_show_the_frame_values():
    probes = Probes(
        results=(ProbeResult("scalars", True, [{"name": "a", "type": "int", "value": 1},
                                               {"name": "b", "type": "int", "value": 0}]),),
        tensors=(TensorSummary("x", (2,), "float32", "cpu", scope="frame"),
                 TensorSummary("table", (9,), "float32", "cpu", scope="module")),
    )
    result = enrich(_diagnosis("other", "division by zero"), probes)
    assert "Values in the failing frame: a = 1, b = 0." in result.evidence
    assert "Tensors in the failing frame: `x` (2,) float32 on cpu." in result.evidence


def test_debugpy_launcher_frames_leave_the_live_diagnosis_and_are_counted():
    text = ("Traceback (most recent call last):\n"
            '  File "<frozen runpy>", line 198, in _run_module_as_main\n'
            '  File "/venv/lib/site-packages/debugpy/server/cli.py", line 568, in main\n    run()\n    ^^^^^\n'
            '  File "/work/train.py", line 3, in <module>\n    step()\n'
            "ValueError: bad\n    second message line\n")
    live = parse_probe_results({"traceback": {"result": repr(json.dumps(text))}})
    assert traceback_text({}, live) == text  # as the process formatted it: the engine hides and counts
    diagnosis = diagnose_probes(traceback_text({}, live), Probes(), correlate=False)
    assert [f.path for f in diagnosis.frames] == ["/work/train.py"]
    assert diagnosis.details["hidden_frames"] == 2
