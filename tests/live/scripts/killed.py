"""The process dies without a Python exception (as under the OOM killer)."""
import os
import signal

print("about to die", flush=True)
os.kill(os.getpid(), signal.SIGKILL)
