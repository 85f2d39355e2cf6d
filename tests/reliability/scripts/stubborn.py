"""Ignores SIGINT and SIGTERM, and so does its grandchild; both run forever."""
import signal
import subprocess
import sys
import time

for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
    signal.signal(s, signal.SIG_IGN)
subprocess.Popen([sys.executable, "-c",
                  "import signal, time\n"
                  "for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP): signal.signal(s, signal.SIG_IGN)\n"
                  "time.sleep(600)"])
print("ready", flush=True)
while True:
    time.sleep(1)
