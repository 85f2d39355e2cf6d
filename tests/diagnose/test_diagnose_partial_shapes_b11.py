"""Partial-evidence shapes of the wild corpus's dev misses (eleventh pass): each paste is synthetic,
written in the shape a real one has, so that the corpus stays unseen data; each shape has a near miss
that must keep its answer."""

from __future__ import annotations

from traindoctor.diagnose import diagnose_text


def _kind(text: str) -> str:
    return diagnose_text(text, correlate=False).kind


# --- a clue that holds only at the innermost frame: the call that passes num_items_in_batch ---

TRAINER_HEAD = """\
Traceback (most recent call last):
  File "/home/u/proj/sft.py", line 88, in <module>
    trainer.train()
  File "/opt/venv/lib/python3.11/site-packages/transformers/trainer.py", line 2245, in train
    return inner_training_loop(
  File "/opt/venv/lib/python3.11/site-packages/transformers/trainer.py", line 2560, in _inner_training_loop
    tr_loss_step = self.training_step(model, inputs, num_items_in_batch)
  File "/opt/venv/lib/python3.11/site-packages/transformers/trainer.py", line 3736, in training_step
    loss = self.compute_loss(model, inputs, num_items_in_batch=num_items_in_batch)
"""


def test_a_stack_cut_at_the_call_passing_num_items_in_batch_is_version_skew() -> None:
    assert _kind(TRAINER_HEAD) == "version-skew"


def test_a_stack_that_entered_the_trainers_own_compute_loss_is_not() -> None:
    # the keyword was accepted: the Trainer's compute_loss ran and called the model, the failure is deeper
    entered = TRAINER_HEAD + """\
  File "/opt/venv/lib/python3.11/site-packages/transformers/trainer.py", line 3801, in compute_loss
    outputs = model(**inputs)
  File "/opt/venv/lib/python3.11/site-packages/torch/nn/modules/module.py", line 1736, in _wrapped_call_impl
    return self._call_impl(*args, **kwargs)
"""
    assert _kind(entered) != "version-skew"


# --- a line clue that holds only where the log stops: NCCL's set-up lines last ---

NCCL_SETUP = "".join(
    f"gpu-node3:{4100 + r}:{4100 + r} [{r}] NCCL INFO {what}\n"
    for r in range(4)
    for what in ("Bootstrap : Using eth0:10.1.2.3<0>", "NET/IB : No device found.",
                 f"ncclCommInitRank comm 0x55d{r}f0 rank {r} nranks 4 cudaDev {r} busId {r}1000 - Init START"))


def test_a_log_that_ends_in_nccls_set_up_is_distributed() -> None:
    assert _kind("torchrun --nproc_per_node 4 train.py\n" + NCCL_SETUP) == "distributed"
    # cut mid-line after the set-up, as a thread's excerpt leaves it
    assert _kind(NCCL_SETUP + "gpu-node3:4101:4190 [1] NCCL INFO Chan") == "distributed"


def test_nccl_set_up_followed_by_training_is_a_healthy_log() -> None:
    training = "".join(f"step {i}  loss {2.0 - i * 0.05:.3f}  lr 1e-4\n" for i in range(12))
    assert _kind(NCCL_SETUP + training) == "other"
    # a few NCCL INFO lines at the end of a healthy log are not the set-up a run stopped in
    short = training + "".join(f"NCCL INFO Channel 0{i}/02 : 0[0] -> 1[1] via P2P/IPC\n" for i in range(3))
    assert _kind(short) == "other"


# --- a backward that retains its graph, cut before the message ---

RETAINED = """\
Traceback (most recent call last):
  File "/home/u/gan/train.py", line 140, in <module>
    train_step(real, noise)
  File "/home/u/gan/train.py", line 97, in train_step
    loss_g.backward(retain_graph=True)
  File "/opt/conda/lib/python3.10/site-packages/torch/_tensor.py", line 522, in backward
    torch.autograd.backward(
  File "/opt/conda/lib/python3.10/site-packages/torch/autograd/__init__.py", line 266, in backward
    Variable._execution_engine.run_backward(  # Calls into the C++ engine to run the backward pass
"""


def test_a_cut_backward_that_retains_its_graph_is_an_in_place_modification() -> None:
    assert _kind(RETAINED) == "inplace-modification"


def test_a_cut_plain_backward_keeps_the_graph_reuse_reading() -> None:
    assert _kind(RETAINED.replace("backward(retain_graph=True)", "backward()")) == "graph-reuse"
    # retain_graph=False frees the graph as usual
    assert _kind(RETAINED.replace("retain_graph=True", "retain_graph=False")) == "graph-reuse"


# --- a rich frame header wrapped at the space after its line number ---

RICH_WRAPPED_AT_SPACE = """\
│ /opt/conda/lib/python3.10/site-packages/torch/utils/data/dataloader.py:701   │
│ in __next__                                                                  │
│                                                                              │
│    700 │   │   │   │   self._reset()  # type: ignore[call-arg]               │
│ ❱  701 │   │   │   data = self._next_data()                                  │
│                                                                              │
│ /home/u/project/train.py:52                                                  │
│ in main                                                                      │
"""


def test_a_rich_header_wrapped_after_its_line_number_is_a_frame() -> None:
    from traindoctor.diagnose.normalize import normalize

    texts = [line.text.strip() for line in normalize(RICH_WRAPPED_AT_SPACE)]
    assert 'File "/opt/conda/lib/python3.10/site-packages/torch/utils/data/dataloader.py", line 701, in __next__' in texts
    assert 'File "/home/u/project/train.py", line 52, in main' in texts


def test_a_header_wrapped_inside_its_line_number_still_joins_without_a_space() -> None:
    from traindoctor.diagnose.normalize import normalize

    inside = "│ /opt/venv/lib/site-packages/torch/nn/modules/module.py:1 │\n│ 527 in _call_impl                                   │\n"
    texts = [line.text.strip() for line in normalize(inside)]
    assert 'File "/opt/venv/lib/site-packages/torch/nn/modules/module.py", line 1527, in _call_impl' in texts


# --- the failure told in the reporter's words: Chinese prose, a paraphrase, a linked Q&A slug ---


def test_chinese_prose_that_the_loss_became_nan_is_nan_inf() -> None:
    assert _kind("训练到第3个epoch的时候loss全部变成了nan，请问是什么原因？\n![image](https://example.com/a.png)\n") == "nan-inf"
    assert _kind("用fp16训练，日志里出现了大量NaN，lr已经调小了还是一样\n") == "nan-inf"


def test_chinese_prose_about_avoiding_nan_is_no_failure() -> None:
    # a question how to avoid NaN, or that none appeared, reports no NaN
    assert _kind("请问怎样避免出现nan？我现在训练一切正常\n") == "other"
    assert _kind("训练了100个epoch，没有出现nan，但是精度不高\n") == "other"


def test_prose_of_backpropagating_twice_is_graph_reuse() -> None:
    text = "My custom autograd Function calls y.backward(dy) itself, so the loop backpropagates through the block twice and fails.\n"
    assert _kind(text) == "graph-reuse"
    assert _kind("Training is twice as slow with the new backward hook.\n") == "other"


def test_prose_or_a_slug_of_an_in_place_gradient_error_is_in_place_modification() -> None:
    assert _kind("See https://stackoverflow.com/questions/1/gradient-computation-has-been-modified-by-an-inplace-operation\n") \
        == "inplace-modification"
    assert _kind("The in-place operation in my attention block breaks the backward pass, I think.\n") == "inplace-modification"
    # inplace=True offered to save memory names no failure
    assert _kind("Use nn.ReLU(inplace=True) to save memory; in-place ops are fine for inference.\n") == "other"


def test_prose_that_ties_the_error_to_mixed_precision_is_amp() -> None:
    assert _kind("With torch 2.1, when I wrap the model in torch.autocast('cuda'), this error occurs in my deformable conv op.\n") == "amp"
    assert _kind("Training in fp16 will trigger the error below, fp32 is fine.\n") == "amp"


def test_mixed_precision_named_without_an_error_is_no_failure() -> None:
    assert _kind("Using 16bit Automatic Mixed Precision (AMP)\nEpoch 0: 100%|##########| 50/50 [00:10<00:00, loss=0.52]\n") == "other"
    assert _kind("I enabled fp16 and the run finished, but accuracy is lower than the paper.\n") == "other"


def test_prose_that_vllm_failed_over_its_cache_blocks_is_cuda_oom() -> None:
    assert _kind("Since upgrading, vLLM fails with the cache blocks error on a 24GB card even at 0.5 utilisation.\n") == "cuda-oom"
    # the start-up log that counts its blocks names no failure
    assert _kind("INFO 05-02 10:11:12 llm_engine.py:337] # GPU blocks: 2712, # CPU blocks: 512\n"
                 "INFO 05-02 10:11:14 model_runner.py:666] Allocated the KV cache blocks in 1.2s\n") == "other"


def test_a_report_that_checks_a_port_in_use_is_distributed() -> None:
    assert _kind("$ lsof -i:29500\n$ torchrun --nproc_per_node=2 train.py\nit still fails right at start\n") == "distributed"
    assert _kind("I changed master_port but the port is already in use again after the crash.\n") == "distributed"


def test_a_port_named_without_a_conflict_is_no_failure() -> None:
    assert _kind("TensorBoard 2.15.1 at http://localhost:6006/ (Press CTRL+C to quit)\nserving on port 6006\n") == "other"
