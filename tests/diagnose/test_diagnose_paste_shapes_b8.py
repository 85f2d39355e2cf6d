"""Paste shapes met in wild batch 8 (h/diag7), each with a quiet twin: IPython 7 frames whose
Windows path holds spaces, a traceback whose newlines were lost, the user frame of a failure
read from a log line, and a NaN loss on a progress bar that outranks the backward frames and
keeps the printed frame. The pastes are written here, shaped like the real ones, so that the
wild corpus stays unseen data."""

from __future__ import annotations

import subprocess
import sys
import textwrap

from traindoctor.diagnose import diagnose_text
from traindoctor.diagnose.normalize import normalize
from traindoctor.monitor.curves import diagnose_curves


def _diagnose(text: str):
    return diagnose_curves(text, diagnose_text(text, correlate=False))


IPYTHON7_WINDOWS_SPACES = """\
---------------------------------------------------------------------------
AttributeError                            Traceback (most recent call last)
~\\Documents\\My Projects\\flow model\\run_train.py in <module>
     40 if __name__ == "__main__":
---> 41     run(cfg)

~\\Documents\\My Projects\\flow model\\run_train.py in run(cfg)
     17     model.train()
---> 18     for i, (x, y) in enumerate(train_loader, 0):
     19         x = x.cuda()
"""


def test_ipython7_frame_whose_windows_path_holds_spaces() -> None:
    location = diagnose_text(IPYTHON7_WINDOWS_SPACES, correlate=False).location
    assert location is not None
    assert (location.path, location.line) == ("~\\Documents\\My Projects\\flow model\\run_train.py", 18)


def test_a_sentence_naming_a_script_is_not_an_ipython7_frame() -> None:
    text = IPYTHON7_WINDOWS_SPACES.replace("~\\Documents\\My Projects\\flow model\\run_train.py in run(cfg)",
                                           "then my run_train.py in run(cfg) fails")
    location = diagnose_text(text, correlate=False).location
    assert location is None or location.line != 18


def _real_traceback(tmp_path) -> str:
    script = tmp_path / "load_it.py"
    script.write_text(textwrap.dedent("""\
        import pickle
        def load(path):
            raise pickle.UnpicklingError("Weights only load failed. In PyTorch 2.6, we changed the default value of the `weights_only` argument in `torch.load` from `False` to `True`.")
        def main():
            load("ckpt.pt")
        main()
        """))
    run = subprocess.run([sys.executable, str(script)], capture_output=True, text=True)
    assert "Traceback" in run.stderr
    return run.stderr


def test_a_traceback_with_its_newlines_lost_reads_as_the_traceback(tmp_path) -> None:
    printed = _real_traceback(tmp_path)
    glued = " ".join(line.strip() for line in printed.splitlines()[1:])  # the header dropped, as pasted
    whole, lost = diagnose_text(printed, correlate=False), diagnose_text(glued, correlate=False)
    assert lost.kind == whole.kind == "weights-only-load"
    assert lost.location is not None and (lost.location.path, lost.location.line) == \
        (whole.location.path, whole.location.line)


def test_one_frame_on_a_line_is_left_as_it_is() -> None:
    text = 'File "/home/u/train.py", line 12, in main loss = model(x) and then it stopped'
    assert [line.text for line in normalize(text)] == [text]


KERNEL_ASSERT_THEN_TRACEBACK = """\
/opt/conda/aten/src/THC/THCTensorScatterGather.cu:130: void THCudaTensor_scatterKernel(TensorInfo<Real, IndexType>, TensorInfo<Real, IndexType>, TensorInfo<long, IndexType>, int, IndexType) [with IndexType = unsigned int, Real = float, Dims = 1]: block: [0,0,0], thread: [95,0,0] Assertion `indexValue >= 0 && indexValue < tensor.sizes[dim]` failed.
Traceback (most recent call last):
  File "tools/train.py", line 102, in <module>
    main()
  File "/home/u/detector/apis/train.py", line 171, in _dist_train
    runner.run(data_loaders, cfg.workflow, cfg.total_epochs)
  File "/opt/conda/lib/python3.7/site-packages/mmcv/runner/runner.py", line 356, in run
    epoch_runner(data_loaders[i], **kwargs)
"""


def test_a_failure_read_from_a_log_line_points_at_the_printed_user_frame() -> None:
    diagnosis = diagnose_text(KERNEL_ASSERT_THEN_TRACEBACK, correlate=False)
    assert diagnosis.kind == "device-side-assert"
    assert (diagnosis.location.path, diagnosis.location.line) == ("/home/u/detector/apis/train.py", 171)


def test_a_log_line_failure_without_a_traceback_has_no_frame() -> None:
    diagnosis = diagnose_text(KERNEL_ASSERT_THEN_TRACEBACK.split("Traceback")[0], correlate=False)
    assert diagnosis.kind == "device-side-assert"
    assert diagnosis.location is None


NAN_BAR_THEN_CUT_TRACEBACK = """\
Steps:   0%|          | 14/6000 [00:49<4:54:46,  2.96s/it, lr=1e-5, noise_step_loss=0.4121]
Steps:   0%|          | 15/6000 [00:52<4:54:46,  2.96s/it, lr=1e-5, noise_step_loss=0.3977]
Steps:   0%|          | 16/6000 [00:55<4:54:46,  2.96s/it, lr=1e-5, noise_step_loss=nan]
Steps:   0%|          | 17/6000 [00:58<4:50:05,  2.91s/it, lr=1e-5, noise_step_loss=nan]
Traceback (most recent call last):
  File "/home/u/sdxl/train_stage_1.py", line 999, in <module>
    main()
  File "/home/u/sdxl/train_stage_1.py", line 928, in main
    accelerator.backward(loss)
  File "/venv/lib/python3.10/site-packages/accelerate/accelerator.py", line 2726, in backward
    self.deepspeed_engine_wrapped.backward(loss, sync_gradients=self.sync_gradients, **kwargs)
"""


def test_a_nan_loss_on_the_bar_outranks_the_backward_frames_and_keeps_the_frame() -> None:
    diagnosis = _diagnose(NAN_BAR_THEN_CUT_TRACEBACK)
    assert diagnosis.kind in ("nan-inf", "nan-onset")
    assert (diagnosis.location.path, diagnosis.location.line) == ("/home/u/sdxl/train_stage_1.py", 928)


def test_a_finite_loss_on_the_bar_leaves_the_backward_frames_their_guess() -> None:
    diagnosis = _diagnose(NAN_BAR_THEN_CUT_TRACEBACK.replace("=nan]", "=0.3811]"))
    assert diagnosis.kind not in ("nan-inf", "nan-onset")


FP16_SCALE_AT_ZERO = """\
Training: 2024-05-02 10:01:10,101-Speed 2100.00 samples/sec   Loss 11.2041   LearningRate 0.100000   Epoch: 0   Global Step: 10   Fp16 Grad Scale:  512   Required: 190 hours
Training: 2024-05-02 10:01:15,202-Speed 2101.00 samples/sec   Loss nan   LearningRate 0.100000   Epoch: 0   Global Step: 20   Fp16 Grad Scale:  0   Required: 180 hours
Training: 2024-05-02 10:01:20,303-Speed 2102.00 samples/sec   Loss nan   LearningRate 0.100000   Epoch: 0   Global Step: 30   Fp16 Grad Scale:  0   Required: 170 hours
Training: 2024-05-02 10:01:25,404-Speed 2103.00 samples/sec   Loss nan   LearningRate 0.100000   Epoch: 0   Global Step: 40   Fp16 Grad Scale:  0   Required: 160 hours
"""


def test_a_nan_loss_under_a_loss_scale_at_zero_stays_amp() -> None:
    assert _diagnose(FP16_SCALE_AT_ZERO).kind == "amp"
