"""A game with no console, driven through helpers, for the desktop adapter's tests.

``desktop_window.py`` (the game) polls the file ``inbox`` for new lines and
draws its screen to ``screen.txt`` (``presses: N`` and the last key); it never
reads stdin or writes stdout, like a windowed game. ``desktop_window.py send
KEY`` (the input helper) appends ``KEY`` to the inbox. ``desktop_window.py
capture`` (the capture helper) waits until the screen shows every key sent so
far, then prints it.
"""

import os
import sys
import time

INBOX, SCREEN = "inbox", "screen.txt"


def lines() -> list[str]:
    try:
        with open(INBOX) as inbox:
            return inbox.read().splitlines()
    except FileNotFoundError:
        return []


def draw(count: int, last: str) -> None:
    with open(SCREEN + ".tmp", "w") as out:
        out.write(f"presses: {count}\nlast: {last}\n")
    os.replace(SCREEN + ".tmp", SCREEN)


if len(sys.argv) > 1 and sys.argv[1] == "send":
    with open(INBOX, "a") as inbox:
        inbox.write(sys.argv[2].strip() + "\n")
    sys.exit(0)

if len(sys.argv) > 1 and sys.argv[1] == "capture":
    while True:
        try:
            with open(SCREEN) as screen:
                text = screen.read()
        except FileNotFoundError:
            text = ""
        if text.startswith(f"presses: {len(lines())}\n"):
            sys.stdout.write(text)
            sys.exit(0)
        time.sleep(0.005)

draw(0, "none")
seen = 0
while True:
    keys = lines()
    if len(keys) > seen:
        seen = len(keys)
        draw(seen, keys[-1])
    time.sleep(0.005)
