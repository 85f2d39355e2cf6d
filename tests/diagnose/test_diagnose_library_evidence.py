"""Evidence that libraries print around a failure whose message the paste lost (issue 28): what a
run printed about its loss (requires_grad False, no grad_fn), torch.utils.checkpoint's warning that
no input requires grad, Lightning's NaN check, a training table of NaN losses, DeepSpeed allocating
the ZeRO optimizer state, a residual add, and a GPU on which ultralytics disables mixed precision.
Each paste is written here in the shape real ones have (the wild corpus stays unseen data); each
has a look-alike that must not be read the same way."""

from __future__ import annotations

import pytest

from traindoctor.diagnose import diagnose_text
from traindoctor.monitor.curves import diagnose_curves


def _diagnose(text: str):
    return diagnose_curves(text, diagnose_text(text, correlate=False))  # what `traindoctor diagnose` does


def _top(diagnosis):
    return diagnosis.kind, [(h.kind, round(h.confidence, 2)) for h in diagnosis.hypotheses]


BACKWARD_CUT = """\
Traceback (most recent call last):
  File "/work/lora/train.py", line 412, in main
    accelerator.backward(loss)
  File "/venv/lib/python3.10/site-packages/accelerate/accelerator.py", line 1905, in backward
    loss.backward(**kwargs)
  File "/venv/lib/python3.10/site-packages/torch/_tensor.py", line 492, in backward
    torch.autograd.backward(
  File "/venv/lib/python3.10/site-packages/torch/autograd/__init__.py", line 251, in backward
    Variable._execution_engine.run_backward(  # Calls into the C++ engine to run the backward pass
"""


def test_a_printed_loss_without_a_graph_before_a_cut_backward_is_no_grad() -> None:
    printed = ("step 0 loss tensor(2.3026, device='cuda:0')\n"
               "loss.requires_grad=False loss.grad_fn=None\n")
    diagnosis = _diagnose(printed + BACKWARD_CUT)
    assert diagnosis.kind == "no-grad", _top(diagnosis)
    assert any("requires_grad" in e for e in diagnosis.hypotheses[0].evidence)
    # the same stack after a loss that has its graph is not read as no-grad first
    healthy = ("step 0 loss tensor(2.3026, device='cuda:0', grad_fn=<NllLossBackward0>)\n"
               "loss.requires_grad=True loss.grad_fn=<NllLossBackward0>\n")
    assert _diagnose(healthy + BACKWARD_CUT).kind != "no-grad"


CHECKPOINT_WARNING = """\
[INFO|trainer.py:1760] 2024-03-02 10:11:12,001 >> ***** Running training *****
[INFO|trainer.py:1761] 2024-03-02 10:11:12,001 >>   Num examples = 52,002
[INFO|trainer.py:1769] 2024-03-02 10:11:12,002 >>   Number of trainable parameters = 4,194,304
  0%|          | 0/3250 [00:00<?, ?it/s]`use_cache=True` is incompatible with gradient checkpointing. Setting `use_cache=False`.
/venv/lib/python3.10/site-packages/torch/utils/checkpoint.py:61: UserWarning: None of the inputs have requires_grad=True. Gradients will be None
  warnings.warn(
"""


def test_checkpointing_with_no_input_requiring_grad_is_no_grad() -> None:
    diagnosis = _diagnose(CHECKPOINT_WARNING)
    assert diagnosis.kind == "no-grad", _top(diagnosis)
    assert "enable_input_require_grads" in diagnosis.hypotheses[0].check
    # the same start-up without the warning shows no failure
    assert _diagnose(CHECKPOINT_WARNING.split("/venv/")[0]).kind == "other"


LIGHTNING_NAN_CHECK = """\
Epoch 3:  41%|████      | 82/200 [00:31<00:45,  2.61it/s, loss=0.412, v_num=2]Traceback (most recent call last):
  File "fit.py", line 37, in <module>
    trainer.fit(model, dm)
  File "/env/lib/python3.7/site-packages/pytorch_lightning/trainer/trainer.py", line 765, in fit
    self.single_gpu_train(model)
  File "/env/lib/python3.7/site-packages/pytorch_lightning/trainer/training_loop.py", line 620, in run_training_batch
    self.detect_nan_tensors(loss)
  File "/env/lib/python3.7/site-packages/pytorch_lightning/trainer/training_tricks.py", line 31, in detect_nan_tensors
"""


def test_a_stack_cut_in_lightnings_nan_check_is_nan_inf() -> None:
    diagnosis = _diagnose(LIGHTNING_NAN_CHECK)
    assert diagnosis.kind == "nan-inf", _top(diagnosis)
    assert (diagnosis.location.path, diagnosis.location.line) == ("fit.py", 37)


NAN_TABLE = """\
      Epoch    GPU_mem   box_loss   cls_loss   dfl_loss  Instances       Size
       1/50      3.41G        nan        nan        nan         41        640: 100%|██████████| 12/12 [00:09<00:00,  1.31it/s]
                 Class     Images  Instances      Box(P          R      mAP50  mAP50-95): 100%|██████████| 2/2 [00:01<00:00
                   all         48        210          0          0          0          0

      Epoch    GPU_mem   box_loss   cls_loss   dfl_loss  Instances       Size
       2/50      3.43G        nan        nan        nan         37        640: 100%|██████████| 12/12 [00:08<00:00,  1.42it/s]
"""


def test_a_training_table_of_nan_losses_is_nan_inf() -> None:
    diagnosis = _diagnose(NAN_TABLE)
    assert diagnosis.kind == "nan-inf", _top(diagnosis)
    # finite losses in the same table are a healthy run
    assert _diagnose(NAN_TABLE.replace("nan        nan        nan", "1.21       2.87       1.34")).kind == "other"


ZERO_STATE = """\
[INFO 2020-06-01 08:00:01] Creating fp16 ZeRO stage 2 optimizer
Traceback (most recent call last):
  File "pretrain.py", line 520, in <module>
    main()
  File "pretrain.py", line 140, in setup
    model, optimizer, _, _ = deepspeed.initialize(args=args, model=model, model_parameters=params)
  File "/opt/conda/lib/python3.6/site-packages/deepspeed/pt/deepspeed_light.py", line 591, in _configure_zero_optimizer
    mpu=self.mpu)
  File "/opt/conda/lib/python3.6/site-packages/deepspeed/pt/deepspeed_zero_optimizer.py", line 333, in __init__
    self.initialize_optimizer_states()
"""


def test_a_stack_cut_while_zero_allocates_the_optimizer_state_is_cuda_oom() -> None:
    diagnosis = _diagnose(ZERO_STATE)
    assert diagnosis.kind == "cuda-oom", _top(diagnosis)
    assert any("offload" in fix.detail for fix in diagnosis.fixes)
    # in today's layout (deepspeed/runtime/zero/) the evidence model answers `sharded` from the
    # library; the memory account stays among its hypotheses, with the frame that supports it
    modern = ZERO_STATE.replace("pt/deepspeed_zero_optimizer.py", "runtime/zero/stage_1_and_2.py")
    hypotheses = {h.kind: h for h in _diagnose(modern).hypotheses}
    assert "initialize_optimizer_states" in " ".join(hypotheses["cuda-oom"].evidence)


def test_a_residual_add_in_a_fragment_is_a_shape_mismatch() -> None:
    text = ('the shapes differ here File "/home/u/det/backbone/resnet.py", line 118, in forward\n'
            "    out += identity\n")
    diagnosis = _diagnose(text)
    assert diagnosis.kind == "shape-mismatch", _top(diagnosis)
    # an add of a loss term is no residual connection
    assert _diagnose('it fails at File "/home/u/det/train.py", line 40, in step\n    total += loss\n').kind != "shape-mismatch"


BANNER = ("Ultralytics YOLOv8.0.20 Python-3.10.9 torch-1.13.1+cu117 CUDA:0 (NVIDIA GeForce GTX 1650, 3912MiB)\n")


def test_mixed_precision_on_a_gpu_ultralytics_blocks_is_amp() -> None:
    text = BANNER + "AMP: running Automatic Mixed Precision (AMP) checks with YOLOv8n...\nAMP: checks passed\n"
    diagnosis = _diagnose(text)
    assert diagnosis.kind == "amp", _top(diagnosis)
    # another GPU is no evidence of an AMP failure
    assert _diagnose(text.replace("GTX 1650", "RTX 3090")).kind == "other"


def test_ultralytics_turning_amp_off_is_no_amp_failure() -> None:
    """A check that failed and was handled (the feature turned off) is a notice, not the run's failure
    (features.yaml settings.warning_line)."""
    off = BANNER + ("AMP: checks failed. AMP training on NVIDIA GeForce GTX 1650 GPU may cause NaN losses or "
                    "zero-mAP results, so AMP will be disabled during training.\n")
    assert _diagnose(off).kind == "other", _top(_diagnose(off))


def test_the_older_cudnn_wording_of_no_algorithm() -> None:
    diagnosis = _diagnose("RuntimeError: no valid convolution algorithms available in CuDNN\n")
    assert diagnosis.kind == "cudnn", _top(diagnosis)


NOTEBOOK_CUT = """\
---------------------------------------------------------------------------
{type}                         Traceback (most recent call last)
Cell In[4], line 2
      1 trainer = Trainer(model=model, args=args, train_dataset=ds)
----> 2 trainer.train()

File /opt/conda/lib/python3.11/site-packages/transformers/trainer.py:2052, in Trainer.train(self, resume_from_checkpoint, trial, ignore_keys_for_eval, **kwargs)
   2050         hf_hub_utils.enable_progress_bars()
   2051 else:
-> 2052     return inner_training_loop(
"""


def test_a_cut_notebook_paste_naming_an_ordinary_error_is_that_error() -> None:
    diagnosis = _diagnose(NOTEBOOK_CUT.format(type="FileNotFoundError"))
    assert diagnosis.kind == "other", _top(diagnosis)
    assert diagnosis.title.startswith("FileNotFoundError")
    assert (diagnosis.location.path, diagnosis.location.line) == ("Cell In[4]", 2)
    # a type a training kind can explain leaves the frames to the clues and the model
    assert _diagnose(NOTEBOOK_CUT.format(type="RuntimeError")).title != "RuntimeError (its message was cut from the paste)"


def test_a_stack_cut_on_a_librarys_raise_of_an_ordinary_error_is_that_error() -> None:
    text = """\
Traceback (most recent call last):
  File "train.py", line 12, in <module>
    model.train(data="coco8.yaml", epochs=3)
  File "/venv/lib/python3.10/site-packages/ultralytics/utils/checks.py", line 520, in check_file
    raise FileNotFoundError(f"'{file}' does not exist")
"""
    diagnosis = _diagnose(text)
    assert diagnosis.kind == "other", _top(diagnosis)
    assert "FileNotFoundError" in diagnosis.title


def test_a_rank_prefix_before_inline_code_on_every_line_keeps_the_frame() -> None:
    lines = ["`Traceback (most recent call last):`",
             '`  File "fit_tagger.py", line 88, in <module>`',
             "`    loss.backward()`",
             '`  File "/env/lib/python3.6/site-packages/torch/autograd/__init__.py", line 99, in backward`',
             "`    variables, grad_variables, retain_graph)`",
             "`RuntimeError: cuda runtime error (59) : device-side assert triggered at /pytorch/THC/THCReduceAll.cuh:339`"]
    diagnosis = _diagnose("\n".join("[rank1]: " + line for line in lines) + "\n")
    assert diagnosis.kind == "device-side-assert", _top(diagnosis)
    assert (diagnosis.location.path, diagnosis.location.line) == ("fit_tagger.py", 88)


VLLM_START = """\
INFO 03-02 10:00:01 llm_engine.py:72] Initializing an LLM engine with config: model='meta-llama/Llama-2-13b-hf', dtype=torch.float16, max_seq_len=4096, tensor_parallel_size=1
INFO 03-02 10:00:40 llm_engine.py:{line}] # GPU blocks: {blocks}, # CPU blocks: 327
"""


def test_vllm_without_kv_cache_blocks_is_cuda_oom() -> None:
    diagnosis = _diagnose(VLLM_START.format(line=207, blocks=0))
    assert diagnosis.kind == "cuda-oom", _top(diagnosis)
    assert _diagnose(VLLM_START.format(line=207, blocks=812)).kind == "other"


def test_vllm_concurrency_below_one_request_is_cuda_oom() -> None:
    line = "INFO 05-11 09:12:03 [kv_cache_utils.py:634] Maximum concurrency for 32,768 tokens per request: {x}x\n"
    diagnosis = _diagnose(line.format(x="0.43"))
    assert diagnosis.kind == "cuda-oom", _top(diagnosis)
    assert _diagnose(line.format(x="4.27")).kind == "other"


def test_torch_1_7s_deterministic_switch_gets_no_fix_it_lacks() -> None:
    message = ("RuntimeError: index_add_cuda_ does not have a deterministic implementation, but you set "
               "'torch.set_deterministic(True)'. You can turn off determinism just for this operation if that's "
               "acceptable for your application.\n")
    diagnosis = _diagnose(message)
    assert diagnosis.kind == "nondeterminism", _top(diagnosis)
    assert "set_deterministic" in diagnosis.root_cause
    assert not any("warn_only" in fix.detail for fix in diagnosis.fixes)  # torch 1.11 added warn_only
    newer = _diagnose(message.replace("set_deterministic", "use_deterministic_algorithms"))
    assert any("warn_only" in fix.detail for fix in newer.fixes)


def test_the_checkpoint_warnings_claims_hold_in_torch() -> None:
    """What the no-grad clue says of torch.utils.checkpoint's warning, checked on this torch: the
    warning's wording, the weights inside the block left without a gradient while a layer after it
    trains, and a loss without grad_fn when nothing else trains."""
    import re
    import warnings

    import torch
    from torch.utils.checkpoint import checkpoint

    from traindoctor.diagnose.partial import _catalog

    clue = next(c for c in _catalog()[1] if c.id == "checkpoint-inputs-no-grad")
    inner, outer = torch.nn.Linear(4, 4), torch.nn.Linear(4, 1)
    x = torch.randn(2, 4)  # a frozen embedding's output: no grad
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        hidden = checkpoint(inner, x, use_reentrant=True)
    assert any(clue.pattern.search(str(w.message)) for w in caught), [str(w.message) for w in caught]
    outer(hidden).sum().backward()
    assert inner.weight.grad is None and outer.weight.grad is not None  # silently untrained
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        alone = checkpoint(inner, x, use_reentrant=True).sum()
    assert alone.grad_fn is None and not alone.requires_grad
    assert re.search("grad_fn", clue.cause)


def test_a_residual_add_of_mismatched_shapes_fails_as_the_clue_says() -> None:
    """The residual-add clue's kind, checked on this torch: the add of a shortcut whose stride or
    channels differ raises the message the shape-mismatch signature reads."""
    import pytest
    import torch

    out, shortcut = torch.zeros(2, 64, 8, 8), torch.zeros(2, 64, 16, 16)
    with pytest.raises(RuntimeError) as raised:
        out += shortcut
    assert _diagnose(f"RuntimeError: {raised.value}\n").kind == "shape-mismatch"
