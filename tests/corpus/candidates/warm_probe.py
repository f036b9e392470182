"""Probe: reports what a case can see of earlier cases, leaves traces, then exits with 3.

Every line goes to stderr (the runner keeps its tail for a crash): the uid, the
home folder and what it held at the start, the namespaces, and the results of
writing where a case must not.
"""

import os
import subprocess
import sys

sys.stdin.buffer.readline()
sys.stdout.buffer.write(b"OK playproof-corpus/1 warm-probe\n")
sys.stdout.buffer.flush()
home = os.environ.get("HOME", "")
report = [
    f"uid={os.getuid()}",
    f"home={home}",
    f"home-held={sorted(os.listdir(home)) if home else None}",
]
for name, path in (("tmp", "/tmp/left-behind"), ("shm", "/dev/shm/left-behind")):
    try:
        with open(path, "w") as handle:
            handle.write("x")
        report.append(f"{name}-write=ok")
    except OSError as exc:
        report.append(f"{name}-write={type(exc).__name__}")
try:
    os.listdir("/run/playproof")
    report.append("control=listed")
except OSError as exc:
    report.append(f"control={type(exc).__name__}")
with open(os.path.join(home, "left-behind"), "w") as handle:
    handle.write("x")
# A process that leaves the candidate's session and would outlive it.
subprocess.Popen(
    ["sleep", "300"],
    start_new_session=True,
    stdin=subprocess.DEVNULL,
    stdout=subprocess.DEVNULL,
    stderr=subprocess.DEVNULL,
)
sys.stderr.write(" ".join(report) + "\n")
sys.stderr.flush()
sys.exit(3)
