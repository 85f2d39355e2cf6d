"""The parent fails while a forked child and a subprocess still run (no torch: fast)."""
import multiprocessing
import subprocess
import sys
import time


def work(seconds):
    time.sleep(seconds)
    print("forked child done", flush=True)


if __name__ == "__main__":
    multiprocessing.set_start_method("fork")
    forked = multiprocessing.Process(target=work, args=(2,))
    forked.start()
    spawned = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(2); print('subprocess done', flush=True)"])
    time.sleep(0.5)
    raise ValueError("the parent failed while its children still run")
