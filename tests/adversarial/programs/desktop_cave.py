"""A text game over stdin for the desktop adapter's tests (not deterministic on purpose).

Commands: ``north``, ``south``, ``take``, ``quit``. The cave has five rooms;
``take`` picks up the gold in the current room, whose amount depends on the
clock (so replaying the inputs would not reproduce the run). After each
command it prints the room, the gold carried and the prompt ``> ``. Three or
more gold prints ``You feel rich.``; ``quit`` prints ``bye`` and exits.
"""

import os
import sys
import time

room, gold = 0, 0
taken: set[int] = set()
seed = int(os.environ.get("PLAYPROOF_SEED", "0"))


def show(extra: str = "") -> None:
    if extra:
        print(extra)
    print(f"room: {room}")
    print(f"gold: {gold}")
    sys.stdout.write("> ")
    sys.stdout.flush()


show(f"seed {seed}; a dark cave")
for line in sys.stdin:
    word = line.strip()
    if word == "north":
        room = min(room + 1, 4)
        show()
    elif word == "south":
        room = max(room - 1, 0)
        show()
    elif word == "take":
        if room in taken or room == 0:
            show("nothing here")
        else:
            taken.add(room)
            gold += 1 + time.monotonic_ns() % 2  # one or two coins: the clock decides
            show("You feel rich." if gold >= 3 else "coins!")
    elif word == "quit":
        print("bye")
        sys.stdout.flush()
        break
    else:
        show("what?")
