"""Failures a paste shows only in the reporter's words, in a library's wording the signatures did
not know, or in a log shape the clues missed (issue 28; chosen from the wild dev half's batches 5
and 6). Each mechanism gets a paste shaped like the real ones and a quiet twin that must not move.
The pastes are written here, so the wild corpus stays unseen data."""

from __future__ import annotations

import pytest

from traindoctor.diagnose import diagnose_text
from traindoctor.diagnose.normalize import normalize
from traindoctor.diagnose.parse import parse_chains
from traindoctor.diagnose.partial import infer
from traindoctor.monitor.curves import diagnose_curves


def kind_of(text: str) -> str:
    return diagnose_curves(text, diagnose_text(text, correlate=False)).kind


# --- bf16 refused: a precision choice (amp), whichever library words the refusal ------------
@pytest.mark.parametrize("paste", [
    "在 colab 的 T4 上训练时出现这个报错：ValueError: Your setup doesn't support bf16/gpu. You need "
    "torch>=1.10, using Ampere GPU with cuda>=11.0",
    'mixed_precision = "bf16"\n\nthrows the following error\n\n`bf16 mixed precision requires PyTorch >= 1.10 '
    'and a supported device.`',
])
def test_bf16_refused_is_amp(paste: str) -> None:
    assert kind_of(paste) == "amp"


def test_a_bf16_setting_without_an_error_is_no_failure() -> None:
    assert kind_of('save_precision = "bf16"\nmixed_precision = "bf16"\n') == "other"


# --- torch < 0.4's load_state_dict KeyError ----------------------------------------------
def test_old_state_dict_key_error_is_checkpoint_mismatch() -> None:
    paste = ("When I resume training with model.load_state_dict(checkpoint['state_dict']) it reports "
             "'unexpected key \"module.encoder.conv0.weight\" in state_dict'.")
    assert kind_of(paste) == "checkpoint-mismatch"


def test_an_unexpected_keyword_is_no_checkpoint_mismatch() -> None:
    paste = "TypeError: __init__() got an unexpected keyword argument 'state_dict'"
    assert kind_of(paste) != "checkpoint-mismatch"


# --- the reporter says the loss became NaN, or the process was killed -------------------
def test_a_reported_nan_loss_is_nan_inf() -> None:
    paste = ("Around step 120000 the training loss becomes nan. I used the default config for 64 epochs.\n\n"
             "[log.txt](https://example.com/log.txt)\n")
    assert kind_of(paste) == "nan-inf"


def test_a_reported_falling_loss_is_no_failure() -> None:
    paste = "The training loss is going down nicely (0.41 -> 0.12) and is never NaN, but accuracy stays flat.\n"
    assert kind_of(paste) == "other"


def test_a_reported_kill_is_host_oom() -> None:
    paste = ('When training reaches about the 4th epoch the terminal displays "killed" without any error message. '
             "With batch_size 1 the same happens at the 10th epoch.\n")
    assert kind_of(paste) == "host-oom"


def test_stopping_a_run_by_hand_is_no_host_oom() -> None:
    paste = "I killed the process with Ctrl-C after two epochs because the loss was flat.\n"
    assert kind_of(paste) != "host-oom"


# --- ZeRO-3 partitions seen outside the engine ----------------------------------------
def test_empty_saved_weights_are_sharded() -> None:
    paste = ("deepspeed stage 3 训练后保存的权重维度为0：zero_pp_rank_0_mp_rank_00_model_states.pt\n"
             "model.embed_tokens.weight : torch.Size([0])\n"
             "model.layers.0.input_layernorm.weight : torch.Size([0])\n"
             "model.layers.0.input_layernorm.bias : torch.Size([0])\n")
    assert kind_of(paste) == "sharded"


def test_a_printed_empty_parameter_in_a_repl_is_sharded() -> None:
    paste = (">>> import torch\n>>> torch.load('mp_rank_00_model_states.pt')\n"
             "{'module': OrderedDict([('fc1.weight', tensor([], device='cuda:0', dtype=torch.float16)), "
             "('fc1.bias', tensor([], device='cuda:0', dtype=torch.float16)), ('fc2.weight',\n")
    assert kind_of(paste) == "sharded"


def test_full_saved_weights_are_no_failure() -> None:
    paste = ("model.embed_tokens.weight : torch.Size([32000, 4096])\n"
             "model.layers.0.input_layernorm.weight : torch.Size([4096])\n")
    assert kind_of(paste) == "other"


# --- torch.compile's own log lines ---------------------------------------------------
def test_graph_break_log_lines_are_compile() -> None:
    paste = (
        "V0301 10:02:11.100000 4242 torch/_dynamo/symbolic_convert.py:556] [2/0] [__graph_breaks] Graph break in "
        "user code at /work/model.py:88\n"
        "V0301 10:02:11.100000 4242 torch/_dynamo/symbolic_convert.py:556] [2/0] [__graph_breaks] Graph Break "
        "Reason: Data-dependent branching\n"
        "V0301 10:02:11.100000 4242 torch/_dynamo/symbolic_convert.py:556] [2/0] [__graph_breaks]   Hint: use "
        "torch.cond\n")
    assert kind_of(paste) == "compile"


def test_epoch_counters_in_brackets_are_no_compile() -> None:
    paste = "".join(f"[{i}/10] loss: 0.{90 - i} acc: 0.{50 + i}\n" for i in range(1, 8))
    assert kind_of(paste) == "other"


# --- a metrics table whose values print in list brackets ---------------------------
def test_bracketed_nan_rows_are_nan_inf() -> None:
    paste = ("`Step      Train loss    Test loss     Test metric\n"
             "0         [4.12e+02]    [4.80e+02]    [1.00e+00]\n"
             "1000      [nan]         [nan]         [nan]\n"
             "2000      [nan]         [nan]         [nan]\n")
    assert kind_of(paste) == "nan-inf"


def test_bracketed_finite_rows_are_no_failure() -> None:
    paste = ("Step      Train loss    Test loss     Test metric\n"
             "0         [4.12e+02]    [4.80e+02]    [1.00e+00]\n"
             "1000      [3.90e+01]    [4.10e+01]    [6.00e-01]\n"
             "2000      [1.10e+00]    [1.30e+00]    [2.00e-01]\n")
    assert kind_of(paste) == "other"


# --- a message pasted without its first sentence (torch's and Python's own wordings) ------
@pytest.mark.parametrize("paste", [
    "To use CUDA with multiprocessing, you must use the 'spawn' start method\nwhich release fixes this for cu113?\n",
    "运行 python main.py --batch_size=256 时报错\n"
    "    This probably means that you are not using fork to start your\n"
    "    child processes and you have forgotten to use the proper idiom\n"
    "    in the main module:\n\n"
    "        if __name__ == '__main__':\n            freeze_support()\n",
])
def test_the_tail_of_a_multiprocessing_message_is_multiprocessing_pickle(paste: str) -> None:
    assert kind_of(paste) == "multiprocessing-pickle"


# --- Python 3.11+ qualified function names in IPython 8 frames ---------------------------
IPYTHON8_PROCESS_START = """\
File c:\\Users\\me\\anaconda3\\envs\\exp\\Lib\\multiprocessing\\process.py:121, in BaseProcess.{function}(self)
    118 assert not _current_process._config.get('daemon'), \\
    119        'daemonic processes are not allowed to have children'
    120 _cleanup()
--> 121 self._popen = self._Popen(self)
"""


def test_a_notebook_stack_cut_in_process_start_is_multiprocessing_pickle() -> None:
    assert kind_of(IPYTHON8_PROCESS_START.format(function="start")) == "multiprocessing-pickle"


def test_a_notebook_stack_cut_in_another_process_method_is_no_pickling() -> None:
    assert kind_of(IPYTHON8_PROCESS_START.format(function="join")) != "multiprocessing-pickle"


# --- a CUDA error c10 reports as a warning (met in a destructor) -------------------------
def test_a_cuda_error_reported_as_a_warning_is_the_failure() -> None:
    paste = ("Warning: CUDA warning: an illegal memory access was encountered (function destroyEvent)\n"
             "terminate called after throwing an instance of 'c10::CUDAError'\n")
    assert kind_of(paste) == "device-side-assert"


def test_a_cuda_warning_at_shutdown_is_no_failure() -> None:
    paste = "Epoch 3 done, val acc 0.91\nWarning: CUDA warning: driver shutting down (function uncheckedGetDevice)\n"
    assert kind_of(paste) == "other"


# --- DeepSpeed building the ZeRO optimizer, the message cut ----------------------------
ZERO_OPTIMIZER_SETUP = """\
Traceback (most recent call last):
  File "/workspace/megatron/training.py", line 419, in setup_model_and_optimizer
    model, optimizer, _, lr_scheduler = deepspeed.initialize(
  File "/opt/conda/lib/python3.8/site-packages/deepspeed/__init__.py", line 119, in initialize
    engine = DeepSpeedEngine(args=args,
  File "/opt/conda/lib/python3.8/site-packages/deepspeed/runtime/engine.py", line 294, in __init__
    self.{call}
  File "/opt/conda/lib/python3.8/site-packages/deepspeed/runtime/engine.py", line 1082, in {function}
"""


def test_a_stack_cut_building_the_zero_optimizer_is_cuda_oom() -> None:
    paste = ZERO_OPTIMIZER_SETUP.format(call="_configure_optimizer(optimizer, model_parameters)",
                                        function="_configure_optimizer")
    assert kind_of(paste) == "cuda-oom"
    # a clue says so, not only the fitted model (which knows the DeepSpeed stack from dev pastes)
    lines = normalize(paste)
    clues = [c for h in infer(lines, parse_chains(lines)) if h.kind == "cuda-oom" for c in h.clues]
    assert "zero-optimizer-setup" in clues


def test_a_stack_cut_configuring_a_lightning_optimizer_is_no_cuda_oom() -> None:
    paste = """\
Traceback (most recent call last):
  File "train.py", line 88, in <module>
    trainer.fit(model, datamodule=dm)
  File "/opt/conda/lib/python3.8/site-packages/pytorch_lightning/trainer/trainer.py", line 740, in fit
    self._run(model)
  File "/opt/conda/lib/python3.8/site-packages/pytorch_lightning/core/optimizer.py", line 179, in _init_optimizers_and_lr_schedulers
    optim_conf = model.trainer._call_lightning_module_hook("configure_optimizers", pl_module=model)
  File "/home/u/proj/model.py", line 51, in configure_optimizers
"""
    assert kind_of(paste) != "cuda-oom"
