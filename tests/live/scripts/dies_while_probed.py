"""The process dies while traindoctor reads it: a C-level watchdog (faulthandler) ends the
process 3 s after it is armed, while the probes are still reading a frame full of large
tensors (several seconds of work on one thread). Neither the watchdog nor its exit runs
Python code, so the debugger's suspension of Python threads cannot stop it."""
import faulthandler

import torch

torch.set_num_threads(1)
activations = torch.randn(16_000_000 - 1)
globals().update({f"layer{i}": activations.view(-1) for i in range(16)})
faulthandler.dump_traceback_later(3.0, exit=True)  # exits with code 1
torch.randn(4, 4) @ torch.randn(5, 2)
