"""A worker thread fails (diagnosed at once); afterwards the main thread starts subprocesses."""
import subprocess
import sys
import threading
import time


def fail():
    raise KeyError("the worker thread failed first")


worker = threading.Thread(target=fail)
worker.start()
worker.join()
time.sleep(1.0)
for n in range(2):
    subprocess.run([sys.executable, "-c", f"print('late child {n} done', flush=True)"], timeout=120)
