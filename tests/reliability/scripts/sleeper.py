"""Runs forever with a grandchild; stops on the usual signals (default handlers)."""
import signal
import subprocess
import sys
import time

# Under nohup (or any launcher that ignores SIGHUP) the ignored disposition is inherited
# through traindoctor; the test is about forwarding, so the script asks for the default.
signal.signal(signal.SIGHUP, signal.SIG_DFL)
subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
print("ready", flush=True)
time.sleep(600)
