"""A game that forks helpers which try to outlive it, for the desktop adapter's tests.

At start it forks a plain child that sleeps, and a grandchild that calls
``setsid`` (leaving the process group) and sleeps; both inherit the
environment, so a test finds any that survive by a tag it set there. Then it
answers every line with ``tick N`` and the prompt ``> ``. With the argument
``launcher`` it instead starts itself again as ``forker-game`` in the
background, writes that child's process id to ``game.pid`` and exits at once
(a launcher whose game lives on).
"""

import os
import sys
import time


def sleeper(detach: bool) -> None:
    if os.fork() == 0:
        if detach:
            os.setsid()
            if os.fork() != 0:
                os._exit(0)
        time.sleep(600)
        os._exit(0)


if len(sys.argv) > 1 and sys.argv[1] == "launcher":
    pid = os.fork()
    if pid == 0:
        os.setsid()
        os.execv(sys.executable, [sys.executable, __file__, "game"])
    with open("game.pid", "w") as out:
        out.write(f"{pid}\n")
    sys.exit(0)

if len(sys.argv) > 1 and sys.argv[1] == "game":
    try:
        import ctypes

        ctypes.CDLL(None).prctl(15, b"forker-game", 0, 0, 0)  # PR_SET_NAME
    except (OSError, AttributeError):
        pass

sleeper(detach=False)
sleeper(detach=True)
sys.stdout.write("> ")
sys.stdout.flush()
for ticks, _line in enumerate(sys.stdin, start=1):
    sys.stdout.write(f"tick {ticks}\n> ")
    sys.stdout.flush()
time.sleep(600)
