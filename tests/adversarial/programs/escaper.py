"""A hostile agent that leaves a sleeper behind on every decision (``python escaper.py MODE``).

The sleeper escapes the way a daemon does: fork, ``setsid`` (a new session, so
a process-group kill misses it), fork again, stdio on /dev/null. Before it
sleeps it runs ``python -c SLEEP TOKEN``, so a test can find it on the host by
its command line, and its pid (as the sleeper itself sees it) is appended to the
file named by ``ESCAPER_RECORD``. With ``ESCAPER_KEEP_STDIO=1`` the sleeper keeps
the agent's stdin, stdout and stderr open instead, as a careless daemon does.
Modes:

- ``oneshot``: read one JSON request on stdin, leave a sleeper, answer, exit;
- ``session``: for each request line, leave a sleeper and answer with its turn.

``leave_sleeper()`` is imported by the escaping toy game too.
"""

from __future__ import annotations

import json
import os
import sys

SLEEP = "import time; time.sleep(600)"


def leave_sleeper() -> int:
    """Start a detached sleeper, record its pid and return it once it sleeps."""
    token = os.environ["ESCAPER_TOKEN"]
    ready_read, ready_write = os.pipe()  # close-on-exec: EOF once the sleeper exec'd
    middle = os.fork()
    if middle == 0:
        os.close(ready_read)
        os.setsid()
        if os.fork() == 0:
            if os.environ.get("ESCAPER_KEEP_STDIO") != "1":
                null = os.open(os.devnull, os.O_RDWR)
                for stream in (0, 1, 2):
                    os.dup2(null, stream)
            os.write(ready_write, str(os.getpid()).encode())
            os.execv(sys.executable, [sys.executable, "-c", SLEEP, token])
        os._exit(0)
    os.close(ready_write)
    os.waitpid(middle, 0)
    with os.fdopen(ready_read, "rb") as ready:
        pid = int(ready.read(32))
    with open(os.environ["ESCAPER_RECORD"], "a", encoding="utf-8") as record:
        record.write(f"{pid}\n")
    return pid


def main() -> int:
    mode = sys.argv[1]
    if mode == "oneshot":
        request = json.loads(sys.stdin.read())
        leave_sleeper()
        print(json.dumps({"input": request["vocabulary"][0], "cost_usd": 0.0}))
        return 0
    if mode == "session":
        for line in sys.stdin:
            request = json.loads(line)
            leave_sleeper()
            answer = {"input": request["vocabulary"][0], "cost_usd": 0.0, "turn": request["turn"]}
            sys.stdout.write(json.dumps(answer) + "\n")
            sys.stdout.flush()
        return 0
    sys.stderr.write(f"unknown mode {mode}\n")
    return 2


if __name__ == "__main__":
    sys.exit(main())
