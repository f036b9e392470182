"""Desktop specs for the tests: small real programs (tests/adversarial/programs) in a folder."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

from playproof.core.contract import Contract, parse_contract

PROGRAMS = Path(__file__).resolve().parent.parent / "adversarial" / "programs"

CAVE_SPEC = """
id = "cave"
vocabulary = ["north", "south", "take", "quit"]
pins = ["desktop_cave.py"]

[launch]
command = [{python}, "desktop_cave.py"]

[observe]
prompt = "> "
step_timeout_s = 20

[rules]
state = [
    {{ key = "gold", pattern = "gold: (\\\\d+)" }},
    {{ key = "room", pattern = "room: (\\\\d+)" }},
]
events = [{{ event = "rich", pattern = "You feel rich" }}]
over = "^bye$"
"""

SAVER_SPEC = """
id = "saver"
vocabulary = ["dig", "smelt", "rewrite", "flood"]
pins = ["desktop_saver.py"]

[launch]
command = [{python}, "desktop_saver.py"]

[observe]
prompt = "\\\\$ "
step_timeout_s = 20

[[collect]]
name = "save"
path = "save.json"
kind = "json"
max_bytes = 65536

[[collect]]
name = "state"
path = "state.bin"
kind = "binary"

[[collect]]
name = "events"
path = "events.log"
kind = "events"

[rules]
save = [
    {{ key = "ore", file = "save", pointer = "/ore" }},
    {{ key = "bars", file = "save", pointer = "/bars" }},
]
save_hash = "state"
"""


def contract_of(game: str, milestones: list[dict[str, Any]]) -> Contract:
    """A contract for ``game`` with ``milestones``."""
    return parse_contract(
        {"schema": "playproof/contract/v1", "game": game, "milestones": milestones}
    )


CAVE_CONTRACT = [
    {"id": "moved", "check": {"kind": "state", "key": "room", "op": ">=", "value": 1}},
    {
        "id": "coin",
        "requires": ["moved"],
        "check": {"kind": "state", "key": "gold", "op": ">=", "value": 1},
    },
    {"id": "rich", "requires": ["coin"], "check": {"kind": "event", "event": "rich"}},
    {"id": "deep", "check": {"kind": "state", "key": "room", "op": ">=", "value": 4}},
]

SAVER_CONTRACT = [
    {"id": "dug", "check": {"kind": "event", "event": "dug"}},
    {"id": "ore3", "check": {"kind": "save", "key": "ore", "op": ">=", "value": 3}},
    {"id": "bar", "check": {"kind": "save", "key": "bars", "op": ">=", "value": 1}},
]


def setup(folder: Path, program: str, spec_text: str, extra: str = "") -> Path:
    """Copy ``program`` into ``folder`` and write its spec there; the spec's path."""
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(PROGRAMS / program, folder / program)
    spec = folder / "spec.toml"
    spec.write_text(spec_text.format(python=json.dumps(sys.executable)) + extra)
    return spec


def cave(folder: Path) -> tuple[Path, Contract]:
    """The cave text game's spec in ``folder`` and its contract."""
    return setup(folder, "desktop_cave.py", CAVE_SPEC), contract_of("desktop-cave", CAVE_CONTRACT)


def saver(folder: Path) -> tuple[Path, Contract]:
    """The save-and-events game's spec in ``folder`` and its contract."""
    spec = setup(folder, "desktop_saver.py", SAVER_SPEC)
    return spec, contract_of("desktop-saver", SAVER_CONTRACT)


SHOUT_SPEC = """
id = "shout"
vocabulary = ["say"]
pins = ["desktop_shout.py"]

[launch]
command = [{python}, "desktop_shout.py"]

[observe]
prompt = "> "
step_timeout_s = 20

[rules]
state = [{{ key = "said", pattern = "said (\\\\d+)" }}]
"""

SHOUT_CONTRACT = [
    {"id": "spoke", "check": {"kind": "state", "key": "said", "op": ">=", "value": 1}}
]


def shout(folder: Path) -> tuple[Path, Contract]:
    """The loud program's spec in ``folder`` (about 120 KB of output per input) and its contract."""
    spec = setup(folder, "desktop_shout.py", SHOUT_SPEC)
    return spec, contract_of("desktop-shout", SHOUT_CONTRACT)


FORKER_SPEC = """
id = "forker"
vocabulary = ["tick"]
pins = ["desktop_forker.py"]

[launch]
mode = {mode}
command = [{python}, "desktop_forker.py"{args}]
env = {{ PLAYPROOF_TEST_TAG = {tag} }}
{extra}

[observe]
prompt = "> "
step_timeout_s = 20

[rules]
state = [{{ key = "ticks", pattern = "tick (\\\\d+)" }}]
"""

FORKER_CONTRACT = [
    {"id": "ticked", "check": {"kind": "state", "key": "ticks", "op": ">=", "value": 2}}
]


def forker(folder: Path, tag: str, mode: str = "spawn") -> tuple[Path, Contract]:
    """The helper-forking game's spec in ``folder`` (launched as ``mode``), tagged with ``tag``.

    ``pid-file`` and ``descendant`` start it through its launcher, which
    leaves the game running in a session of its own and exits.
    """
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(PROGRAMS / "desktop_forker.py", folder / "desktop_forker.py")
    args, extra = "", ""
    if mode == "pid-file":
        args, extra = ', "launcher"', 'pid_file = "game.pid"'
    elif mode == "descendant":
        args, extra = ', "launcher"', 'descendant = "forker-game"'
    text = FORKER_SPEC.format(
        python=json.dumps(sys.executable),
        mode=json.dumps(mode),
        args=args,
        extra=extra,
        tag=json.dumps(tag),
    )
    spec = folder / "spec.toml"
    spec.write_text(text)
    return spec, contract_of("desktop-forker", FORKER_CONTRACT)


WINDOW_SPEC = """
id = "window"
vocabulary = ["left", "right"]
pins = ["desktop_window.py"]

[launch]
mode = {mode}
{launch}

[input]
via = "helper"
template = "{{input}}"
helper = [{python}, "desktop_window.py", "send"]

[observe]
via = "capture"
capture = [{python}, "desktop_window.py", "capture"]
step_timeout_s = 20

[rules]
state = [{{ key = "presses", pattern = "presses: (\\\\d+)" }}]
events = [{{ event = "went-right", pattern = "^last: right$" }}]
"""

WINDOW_CONTRACT = [
    {"id": "pressed", "check": {"kind": "state", "key": "presses", "op": ">=", "value": 2}},
    {"id": "right", "check": {"kind": "event", "event": "went-right"}},
]


def window(folder: Path, *, pid: int | None = None) -> tuple[Path, Contract]:
    """The helper-driven windowed game's spec in ``folder``: spawned, or attached to ``pid``."""
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(PROGRAMS / "desktop_window.py", folder / "desktop_window.py")
    python = json.dumps(sys.executable)
    launch = f"pid = {pid}" if pid is not None else f'command = [{python}, "desktop_window.py"]'
    mode = json.dumps("pid" if pid is not None else "spawn")
    spec = folder / "spec.toml"
    spec.write_text(WINDOW_SPEC.format(mode=mode, launch=launch, python=python))
    return spec, contract_of("desktop-window", WINDOW_CONTRACT)
