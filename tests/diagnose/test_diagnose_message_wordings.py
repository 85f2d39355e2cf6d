"""Message wordings the signatures learnt from the wild corpus's dev half (issue 28): older or
library-specific texts of known kinds. Each paste is written here (the corpus stays unseen)."""

from __future__ import annotations

import pytest

from traindoctor.diagnose import diagnose_text

_TAIL = 'Traceback (most recent call last):\n  File "train.py", line 50, in <module>\n    step()\n'


@pytest.mark.parametrize(("message", "kind"), [
    # torch <= 1.5 (TensorIterator::compute_types), e.g. a float64 target in mse_loss's backward
    ("RuntimeError: expected dtype Double but got dtype Float (validate_dtype at "
     "/pytorch/aten/src/ATen/native/TensorIterator.cpp:143)", "dtype-mismatch"),
    # detectron2's trainer stops on a non-finite loss
    ("FloatingPointError: Loss became infinite or NaN at iteration=12!\nloss_dict = {'loss_cls': nan}", "nan-inf"),
    # vLLM's start-up check of the KV cache against the memory left after the weights
    ("ValueError: To serve at least one request with the models's max seq len (32768), (2.00 GiB KV cache is "
     "needed, which is larger than the available KV cache memory (1.10 GiB). Try increasing "
     "`gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine.", "cuda-oom"),
    # DeepSpeed's dynamic loss scaler gives up
    ("Exception: Current loss scale already at minimum - cannot decrease scale anymore. Exiting run.", "amp"),
    # a launcher's child killed by the OOM killer
    ("subprocess.CalledProcessError: Command '['/usr/bin/python', 'train.py']' died with <Signals.SIGKILL: 9>.",
     "host-oom"),
    ("RuntimeError: FlashAttention only supports Ampere GPUs or newer.", "cuda-env"),
    ("RuntimeError: Expected is_sm80 || is_sm90 to be true, but got false.", "cuda-env"),
    ("RuntimeError: CUDA driver initialization failed, you might not have a CUDA gpu.", "cuda-env"),
    ("torch.cuda.DeferredCudaCallError: CUDA call failed lazily at initialization with error: device >= 0 && "
     "device < num_gpus INTERNAL ASSERT FAILED", "cuda-env"),
    ("IndexError: index out of range in self", "device-side-assert"),
    ("RuntimeError: Output 0 of BackwardHookFunctionBackward is a view and is being modified inplace.",
     "inplace-modification"),
    ("RuntimeError: Expected a 'cuda' device type for generator but found 'cpu'", "device-mismatch"),
    ("RuntimeError: Timed out initializing process group in store based barrier on rank: 0, for key: "
     "store_based_barrier_key:1 (world_size=2, worker_count=1, timeout=0:30:00)", "distributed"),
    ("RuntimeError: Tensors must be CUDA and dense", "distributed"),
    ("TypeError: forward() got an unexpected keyword argument 'num_items_in_batch'", "version-skew"),
    ('OSError: [WinError 1455] \u9875\u9762\u6587\u4ef6\u592a\u5c0f Error loading "C:\\py\\torch\\lib\\cudnn64_8.dll" '
     "or one of its dependencies.", "host-oom"),  # the paging file, in a Chinese Windows
    ('OSError: [WinError 126] The specified module could not be found. Error loading '
     '"C:\\py\\torch\\lib\\fbgemm.dll" or one of its dependencies.', "cuda-env"),
    ("ERROR: Unexpected segmentation fault encountered in worker.", "dataloader-worker"),
    ("RuntimeError: received 0 items of ancdata", "dataloader-worker"),
    ("torch.multiprocessing.spawn.ProcessExitedException: process 0 terminated with signal SIGKILL", "host-oom"),
    # torch <= 1.5's wording without the argument's number: half precision meets float32
    ("RuntimeError: Expected object of scalar type c10::Half but got scalar type float for argument 'other'", "amp"),
    ("RuntimeError: Expected object of scalar type Long but got scalar type Float for argument 'target'",
     "dtype-mismatch"),
    ("RuntimeError: Expected object of device type cuda but got device type cpu for argument 'other' in call to "
     "_th_mm", "device-mismatch"),
    # well-known torch / CUDA / library wordings (from their sources), not from the corpus
    ("RuntimeError: Error building extension 'fused_adam'", "cuda-env"),
    ("RuntimeError: Ninja is required to load C++ extensions", "cuda-env"),
    ("OSError: CUDA_HOME environment variable is not set. Please set it to your CUDA install root.", "cuda-env"),
    ("ValueError: Your setup doesn't support bf16/gpu. You need torch>=1.10, using Ampere GPU with cuda>=11.0",
     "amp"),
    ("ValueError: bf16 mixed precision requires PyTorch >= 1.10 and a supported device.", "amp"),
    ("RuntimeError: CUDA error: the launch timed out and was terminated", "cuda-env"),
    ("AttributeError: 'NoneType' object has no attribute 'cadam32bit_grad_fp32'", "cuda-env"),
    ("RuntimeError: CUDA error: an illegal instruction was encountered", "device-side-assert"),
    ("ValueError: optimizer got an empty parameter list", "no-grad"),
    ("OSError: [Errno 12] Cannot allocate memory", "host-oom"),
    ("RuntimeError: Couldn't load custom C++ ops. This can happen if your PyTorch and torchvision versions are "
     "incompatible, or if you had errors while compiling torchvision from source.", "version-skew"),
    ("RuntimeError: Detected that PyTorch and torchvision were compiled with different CUDA major versions. "
     "PyTorch has CUDA Version=11.8 and torchvision has CUDA Version=12.1.", "version-skew"),
    ("RuntimeError: Placeholder storage has not been allocated on MPS device!", "device-mismatch"),
    ("ValueError: Some modules are dispatched on the CPU or the disk. Make sure you have enough GPU RAM to fit the "
     "quantized model.", "cuda-oom"),
    ("RuntimeError: Cannot re-initialize CUDA in forked subprocess. To use CUDA with multiprocessing, you must use "
     "the 'spawn' start method", "multiprocessing-pickle"),
    ("RuntimeError: Function MyOpBackward returned an invalid gradient at index 0 - got [8, 3] but expected shape "
     "compatible with [8, 4]", "shape-mismatch"),
    ("RuntimeError: grad can be implicitly created only for scalar outputs", "shape-mismatch"),
    ("torch._C._LinAlgError: linalg.cholesky: The factorization could not be completed because the input is not "
     "positive-definite (the leading minor of order 3 is not positive-definite).", "nan-inf"),
    ("RuntimeError: svd_cuda: (Batch element 0): The algorithm failed to converge because the input matrix is "
     "ill-conditioned or has too many repeated singular values (error code: 15).", "nan-inf"),
    ("ValueError: Using a `device_map`, `tp_plan`, `torch.device` context manager or setting "
     "`torch.set_default_device(device)` requires `accelerate`. You can install it with `pip install accelerate`",
     "hf-setup"),
    # Lightning, transformers/PEFT, DeepSpeed/FSDP, vLLM and ultralytics wordings of known kinds
    ("lightning_fabric.utilities.exceptions.MisconfigurationException: No supported gpu backend found!", "cuda-env"),
    ("pytorch_lightning.utilities.exceptions.MisconfigurationException: You requested gpu: [0]\n"
     " But your machine only has: []", "cuda-env"),
    ("RuntimeError: CUDA error: unknown error", "cuda-env"),
    ("RuntimeError: Lightning can't create new processes if CUDA is already initialized. Did you manually call "
     "`torch.cuda.*` functions?", "multiprocessing-pickle"),
    ("MisconfigurationException: `Trainer(strategy='ddp')` or `Trainer(accelerator='ddp')` is not compatible with "
     "an interactive environment. Run your code as a script", "distributed"),
    ("RuntimeError: It looks like your LightningModule has parameters that were not used in producing the loss "
     "returned by training_step.", "distributed"),
    ("RuntimeError: Expected to mark a variable ready only once. This error is caused by one of the following "
     "reasons: 1) Use of a module parameter outside the `forward` function.", "distributed"),
    ("AssertionError: DeepSpeed backend not set, please initialize it using init_process_group()", "distributed"),
    ("ValueError: Cannot flatten integer dtype tensors", "sharded"),
    ("deepspeed.runtime.zero.utils.ZeRORuntimeException: You are using ZeRO-Offload with a client provided "
     "optimizer (<class 'torch.optim.adamw.AdamW'>)", "sharded"),
    ("OSError: Unable to load weights from pytorch checkpoint file for 'bert-base' at 'pytorch_model.bin'.",
     "checkpoint-mismatch"),
    ("ValueError: The checkpoint you are trying to load has model type `qwen2` but Transformers does not "
     "recognize this architecture.", "version-skew"),
    ("ValueError: Tokenizer class LlamaTokenizer does not exist or is not currently imported.", "version-skew"),
    ("ValueError: You cannot perform fine-tuning on purely quantized models. Please attach trainable adapters on "
     "top of the quantized model to correctly perform fine-tuning.", "hf-setup"),
    ("OSError: You are trying to access a gated repo.", "hf-setup"),
    ("ValueError: The model's max seq len (32768) is larger than the maximum number of tokens that can be stored "
     "in KV cache (16400). Try increasing `gpu_memory_utilization`", "cuda-oom"),
    ("AssertionError: Label class 5 exceeds nc=5 in data/coco.yaml. Possible class labels are 0-4",
     "device-side-assert"),
    ("RuntimeError: Expected query, key, and value to have the same dtype, but got query.dtype: float key.dtype: "
     "c10::Half and value.dtype: c10::Half instead.", "amp"),
    ("RuntimeError: FlashAttention only support fp16 and bf16 data type", "amp"),
    ("RuntimeError: unable to mmap 1048576 bytes from file </torch_12_34>: Cannot allocate memory (12)",
     "dataloader-worker"),
    ("RuntimeError: non-empty 3D or 4D (batch mode) tensor expected for input", "shape-mismatch"),
    ("IndexError: index 5 is out of bounds for dimension 0 with size 5", "device-side-assert"),
    ("RuntimeError: gather(): index 12 is out of bounds for dimension 1 with size 10", "device-side-assert"),
    ("RuntimeError: Caught RuntimeError in pin memory thread for device 0.", "dataloader-worker"),
    ("RuntimeError: DDP expects same model across all ranks, but Rank 0 has 214 params, while rank 1 has "
     "inconsistent 215 params.", "distributed"),
    ("RuntimeError: use_libuv was requested but PyTorch was build without libuv support", "distributed"),
    ("AssertionError: MMCV==1.2.4 is used but incompatible. Please install mmcv>=1.3.17, <=1.8.0.", "version-skew"),
    ("ValueError: Invalid CUDA 'device=0' requested. Use 'device=cpu' or pass valid CUDA device(s) if available, "
     "i.e. 'device=0' or 'device=0,1,2,3' for Multi-GPU.", "cuda-env"),
    # transformers' TrainingArguments: the Trainer needs a newer accelerate
    ("ImportError: Using the `Trainer` with `PyTorch` requires `accelerate>=0.26.0`: Please run "
     "`pip install transformers[torch]` or `pip install 'accelerate>=0.26.0'`", "hf-setup"),
    # transformers' from_pretrained without accelerate (the 8-bit wording, and the newer one with a version)
    ("ImportError: Using `load_in_8bit=True` requires Accelerate: `pip install accelerate` and the latest version "
     "of bitsandbytes `pip install -i https://test.pypi.org/simple/ bitsandbytes` or pip install bitsandbytes`",
     "hf-setup"),
    ("ImportError: Using `low_cpu_mem_usage=True` or a `device_map` requires Accelerate: "
     "`pip install 'accelerate>=0.26.0'`", "hf-setup"),
    # PEFT has no default target modules for this model type
    ("ValueError: Please specify `target_modules` in `peft_config`", "hf-setup"),
    # a setup.py build through torch.utils.cpp_extension's BuildExtension
    ("RuntimeError: Error compiling objects for extension", "cuda-env"),
    # Lightning's finite-loss check prints the loss tensor; fairseq's loss scaler gives up
    ("ValueError: The loss returned in `training_step` is tensor(nan, device='cuda:0').", "nan-inf"),
    ("FloatingPointError: Minimum loss scale reached (0.0001). Your loss is probably exploding. Try lowering the "
     "learning rate, using gradient clipping or increasing the batch size.", "amp"),
    # torch 1.7 named its deterministic switch torch.set_deterministic
    ("RuntimeError: index_add_cuda_ does not have a deterministic implementation, but you set "
     "'torch.set_deterministic(True)'. You can turn off determinism just for this operation if that's "
     "acceptable for your application.", "nondeterminism"),
    # torch <= 1.x's cuDNN algorithm search (getValidAlgorithms)
    ("RuntimeError: no valid convolution algorithms available in CuDNN", "cudnn"),
])
def test_wording(message: str, kind: str) -> None:
    diagnosis = diagnose_text(_TAIL + message + "\n", correlate=False)
    assert diagnosis.kind == kind, diagnosis.title
    assert (diagnosis.location.path, diagnosis.location.line) == ("train.py", 50)


def test_the_raise_line_of_load_state_dict_amid_log_records() -> None:
    text = ("2020-08-19 08:31:36,539 maskrcnn.utils.model_serialization INFO: REMATCHING! backbone.layer3.bn2.weight\n"
            '    self.__class__.__name__, "\\n\\t".join(error_msgs)))\n'
            "2020-08-19 08:31:36,540 maskrcnn.utils.model_serialization INFO: REMATCHING! backbone.layer3.bn3.bias\n")
    diagnosis = diagnose_text(text, correlate=False)
    assert diagnosis.kind == "checkpoint-mismatch"
    assert diagnosis.hypotheses[0].check


def test_a_message_without_its_exception_line_that_names_an_iteration() -> None:
    text = ("Runtime Error: floatingPointError: Loss became infinite or NaN at iteration=166!\n"
            "loss_dict = {'loss_cls': nan, 'loss_box_reg': nan}\n")
    assert diagnose_text(text, correlate=False).kind == "nan-inf"
    # a progress line with a NaN loss and no error in it is left to the loss-curve detectors
    assert diagnose_text("iteration=166 loss: nan lr: 0.01\n", correlate=False).kind == "other"
