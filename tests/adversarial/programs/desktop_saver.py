"""A game that keeps its state in files, for the desktop adapter's tests.

Reads commands on stdin: ``dig`` adds a random amount (from the OS, so not
replayable) of ore to ``save.json`` and appends ``dug`` to ``events.log``;
``smelt`` turns ore into bars and appends ``smelted``; ``rewrite`` (a
misbehaving game) rewrites the event log instead of appending; ``flood``
writes a save file far over any sane bound. Each command prints ``ok`` and
the prompt ``$ ``.
"""

import json
import os
import sys

state = {"ore": 0, "bars": 0, "history": []}


def save() -> None:
    with open("save.json.tmp", "w") as out:
        json.dump(state, out)
    os.replace("save.json.tmp", "save.json")
    with open("state.bin", "wb") as out:
        out.write(bytes([state["ore"] % 256, state["bars"] % 256]))


def event(name: str) -> None:
    with open("events.log", "a") as log:
        log.write(name + "\n")


save()
sys.stdout.write("ready\n$ ")
sys.stdout.flush()
for line in sys.stdin:
    word = line.strip()
    if word == "dig":
        state["ore"] += 1 + os.urandom(1)[0] % 3
        state["history"].append("dig")
        event("dug")
    elif word == "smelt" and state["ore"] >= 2:
        state["ore"] -= 2
        state["bars"] += 1
        event("smelted")
    elif word == "rewrite":
        with open("events.log", "w") as log:
            log.write("forged\n")
    elif word == "flood":
        with open("save.json", "w") as out:
            out.write(" " * (2 << 20))
        sys.stdout.write("ok\n$ ")
        sys.stdout.flush()
        continue
    save()
    sys.stdout.write("ok\n$ ")
    sys.stdout.flush()
