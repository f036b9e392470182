"""Hostile replies on RetroArch's command port: every one is a typed error, never a hang."""

from __future__ import annotations

import contextlib
import socket
import sys
import threading
import time
import tracemalloc
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import playproof
from playproof.adapters.retroarch import make_game
from playproof.adapters.retroarch._commands import MAX_REPLY_BYTES, CommandClient
from playproof.adapters.retroarch._game import MAX_ROM_BYTES, retroarch_version
from playproof.adapters.retroarch._options import MAX_BOOT_FRAMES
from playproof.adapters.retroarch._states import state_fingerprint
from playproof.core.contract import Contract, parse_contract
from playproof.errors import TargetError
from playproof.targets import adhoc_target
from playproof.targets.retroarch import CORE_DIR


@pytest.fixture
def hostile() -> Iterator[tuple[socket.socket, CommandClient]]:
    server = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    server.bind(("127.0.0.1", 0))
    port = server.getsockname()[1]
    client = CommandClient(port, port, timeout=0.3)
    yield server, client
    client.close()
    server.close()


def _answer_once(server: socket.socket, reply: bytes) -> threading.Thread:
    def run() -> None:
        server.settimeout(2)
        _, sender = server.recvfrom(4096)
        server.sendto(reply, sender)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


@pytest.mark.parametrize(
    ("reply", "message"),
    [
        (b"READ_CORE_MEMORY c000 " + b"00 " * 20_000, "over"),  # one datagram over the bound
        # A reply for another address answers some earlier request: it is skipped,
        # and with no reply for this one the request times out.
        (b"READ_CORE_MEMORY d000 00 00", "did not answer"),
        (b"READ_CORE_MEMORY c000 zz 00", "hex bytes"),
        (b"READ_CORE_MEMORY c000 00", "hex bytes"),  # short
        (b"READ_CORE_MEMORY c000 -1 no descriptor", "no memory"),
        (b"READ_CORE_MEMORY", "answered"),
    ],
)
def test_hostile_memory_replies(
    hostile: tuple[socket.socket, CommandClient], reply: bytes, message: str
) -> None:
    server, client = hostile
    assert len(reply) > MAX_REPLY_BYTES or message != "over"
    thread = _answer_once(server, reply)
    with pytest.raises(TargetError, match=message):
        client.read_memory(0xC000, 2)
    thread.join()


def test_silence_is_a_timeout_not_a_hang(hostile: tuple[socket.socket, CommandClient]) -> None:
    _, client = hostile
    with pytest.raises(TargetError, match="did not answer GET_STATUS"):
        client.status()


def test_a_timeout_names_the_time_it_waited(hostile: tuple[socket.socket, CommandClient]) -> None:
    _, client = hostile
    with pytest.raises(TargetError, match=r"did not answer GET_STATUS within 0\.05 s"):
        client.status(timeout=0.05)


def test_replies_from_elsewhere_are_ignored(hostile: tuple[socket.socket, CommandClient]) -> None:
    _, client = hostile
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as intruder:
        intruder.sendto(b"GET_STATUS PAUSED forged", client._socket.getsockname())
        with pytest.raises(TargetError, match="did not answer"):
            client.status()


def test_replies_from_another_address_with_the_command_port_are_ignored(
    hostile: tuple[socket.socket, CommandClient],
) -> None:
    server, client = hostile
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as intruder:
        # Another loopback address, same port number as RetroArch's command port.
        intruder.bind(("127.0.0.2", server.getsockname()[1]))

        def forge() -> None:
            server.settimeout(2)
            _, asker = server.recvfrom(4096)  # the request went out: answer it in its place
            intruder.sendto(b"GET_STATUS PAUSED forged", asker)

        thread = threading.Thread(target=forge, daemon=True)
        thread.start()
        with pytest.raises(TargetError, match="did not answer"):
            client.status()
        thread.join()


def test_bad_options_list_every_problem() -> None:
    with pytest.raises(TargetError) as info:
        make_game(frame_channel="frames", channels={"x": {"address": 1}}, press_frames=9)
    text = str(info.value)
    assert "unknown channel 'frames'" in text
    assert "exactly one of rom" in text
    assert "press_frames" in text


# -- ad-hoc retroarch:CORE:FILE specs: every bad part is a typed error before a launch --

MEMORY_CONTRACT = parse_contract(
    {
        "schema": "playproof/contract/v1",
        "game": "any",
        "milestones": [
            {"id": "m", "check": {"kind": "state", "key": "ram_c000", "op": ">=", "value": 1}}
        ],
    }
)
PP_COLLECT = Path(playproof.__file__).parent / "adapters" / "pyboy" / "rom" / "pp_collect.gb"


def _contract(check: dict[str, object]) -> Contract:
    return parse_contract(
        {
            "schema": "playproof/contract/v1",
            "game": "any",
            "milestones": [{"id": "m", "check": check}],
        }
    )


def test_an_unknown_core_is_named_with_the_installed_ones() -> None:
    with pytest.raises(TargetError, match="no libretro core named 'nosuchcore' is installed"):
        adhoc_target(f"retroarch:nosuchcore:{PP_COLLECT}", MEMORY_CONTRACT)


def test_a_missing_rom_is_a_typed_error(tmp_path: Path) -> None:
    core = _a_core(tmp_path)
    with pytest.raises(TargetError, match="cannot read ROM"):
        adhoc_target(f"retroarch:{core}:{tmp_path / 'missing.gb'}", MEMORY_CONTRACT)


def test_a_rom_over_the_bound_is_refused_not_cut(tmp_path: Path) -> None:
    core = _a_core(tmp_path)
    big = tmp_path / "big.gb"
    with big.open("wb") as handle:
        handle.truncate(MAX_ROM_BYTES + 1)  # sparse: nothing is written
    with pytest.raises(TargetError, match="ROM"):
        adhoc_target(f"retroarch:{core}:{big}", MEMORY_CONTRACT)


@pytest.mark.parametrize(
    "content",
    [b"just text, not a library", b"\x7fELF" + b"\0" * 64 + b"retro_run"],
    ids=["not-elf", "elf-without-libretro"],
)
def test_a_file_that_is_not_a_libretro_core_is_refused(tmp_path: Path, content: bytes) -> None:
    fake = tmp_path / "fake_libretro.so"
    fake.write_bytes(content)
    with pytest.raises(TargetError, match="is not a libretro core"):
        adhoc_target(f"retroarch:{fake}:{PP_COLLECT}", MEMORY_CONTRACT)


@pytest.mark.parametrize(
    "check",
    [
        {"kind": "frame-hash", "hash": "0" * 64},
        {"kind": "frame", "key": "brightness", "op": ">=", "value": 1},
    ],
    ids=["frame-hash", "frame"],
)
def test_a_contract_pinning_the_screen_is_refused_saying_why(
    tmp_path: Path, check: dict[str, object]
) -> None:
    core = _a_core(tmp_path)
    with pytest.raises(TargetError, match=r"pins the screen.*never pinned"):
        adhoc_target(f"retroarch:{core}:{PP_COLLECT}", _contract(check))


@pytest.mark.parametrize(
    ("check", "message"),
    [
        ({"kind": "state", "key": "score", "op": ">=", "value": 1}, "ram_ADDR"),
        ({"kind": "state", "key": "ram_xyz", "op": ">=", "value": 1}, "ram_ADDR"),
        ({"kind": "event", "event": "door"}, "do not record"),
        ({"kind": "save-hash", "hash": "0" * 64}, "do not record"),
    ],
)
def test_a_contract_reading_anything_but_memory_is_refused(
    tmp_path: Path, check: dict[str, object], message: str
) -> None:
    core = _a_core(tmp_path)
    with pytest.raises(TargetError, match=message):
        adhoc_target(f"retroarch:{core}:{PP_COLLECT}", _contract(check))


def test_a_spec_without_core_and_file_says_the_shape() -> None:
    with pytest.raises(TargetError, match="retroarch:CORE:FILE"):
        adhoc_target("retroarch:gambatte", MEMORY_CONTRACT)


def _a_core(tmp_path: Path) -> str:
    """An installed core's name, or a stand-in library that passes the core check."""
    if (CORE_DIR / "gambatte_libretro.so").is_file():
        return "gambatte"
    fake = tmp_path / "stand_in_libretro.so"
    fake.write_bytes(b"\x7fELF" + b"\0retro_api_version\0retro_run\0retro_serialize\0")
    return str(fake)


# -- boot-state fingerprints: hostile bytes never raise, blanking touches only named fields --


def _gambatte_state(fields: list[tuple[bytes, bytes]]) -> bytes:
    mem = b"\0\x01\0\0\0" + b"".join(
        name + b"\0" + len(data).to_bytes(3, "big") + data for name, data in fields
    )
    padded = mem + b"\0" * (-len(mem) % 8)
    return b"RASTATE\x01MEM " + len(mem).to_bytes(4, "little") + padded + b"END \0\0\0\0"


ROM_ONLY = bytes(0x150)
CLOCK_CART = bytes(0x147) + b"\x10" + bytes(8)


def test_host_clock_and_unset_mapper_fields_do_not_count() -> None:
    one = _gambatte_state([(b"pc", b"\x01\x00"), (b"rtcbase", b"\x6b\x0e\x7e\x09"),
                           (b"rombank", b"\x00\x00")])  # fmt: skip
    two = _gambatte_state([(b"pc", b"\x01\x00"), (b"rtcbase", b"\x6b\x0e\x7e\x14"),
                           (b"rombank", b"\x22\x3a")])  # fmt: skip
    assert state_fingerprint(one, ROM_ONLY) == state_fingerprint(two, ROM_ONLY)
    # On a cartridge with a mapper, the mapper bytes are the game's: they count.
    mapped = bytes(0x147) + b"\x01" + bytes(8)
    assert state_fingerprint(one, mapped) != state_fingerprint(two, mapped)
    moved = _gambatte_state([(b"pc", b"\x02\x00"), (b"rtcbase", b"\x6b\x0e\x7e\x09"),
                             (b"rombank", b"\x00\x00")])  # fmt: skip
    assert state_fingerprint(one, ROM_ONLY) != state_fingerprint(moved, ROM_ONLY)


def test_a_real_time_clock_cartridge_on_gambatte_is_refused() -> None:
    state = _gambatte_state([(b"rtcbase", b"\x00\x00\x00\x01")])
    with pytest.raises(TargetError, match="real-time clock"):
        state_fingerprint(state, CLOCK_CART)


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=512), st.binary(max_size=0x160))
def test_any_bytes_get_a_fingerprint_or_a_typed_error(state: bytes, rom: bytes) -> None:
    for candidate in (state, b"RASTATE\x01" + state, _gambatte_state([(b"x", state)])):
        with contextlib.suppress(TargetError):
            assert len(state_fingerprint(candidate, rom)) == 64


def test_counted_boot_options_that_cannot_hold_are_refused() -> None:
    with pytest.raises(TargetError) as info:
        make_game(rom="pp-collect", boot_frames=10, boot_press="start", boot_state="x.state")
    text = str(info.value)
    assert "boot_frames boots with no input" in text
    assert "not with boot_state" in text
    with pytest.raises(TargetError, match="give one of ready_channel"):
        make_game(rom="pp-collect")
    with pytest.raises(TargetError, match="boot_frames"):
        make_game(rom="pp-collect", boot_frames=MAX_BOOT_FRAMES + 1)


# -- a RetroArch that dies: its error is read from the tail of its log, whatever its size --

_DYING_RETROARCH = """\
import os
import sys

os.write(1, b"loading the core\\n")
os.ftruncate(1, 8 << 40)  # a log of 8 TiB (sparse: nothing is written)
os.lseek(1, 0, os.SEEK_END)
os.write(1, b"fatal: the core would not load\\n")
sys.exit(3)
"""


def test_a_retroarch_that_dies_with_a_huge_log_is_named_from_its_tail(tmp_path: Path) -> None:
    program = tmp_path / "retroarch"
    program.write_text(f"#!{sys.executable}\n{_DYING_RETROARCH}")
    program.chmod(0o755)
    core = tmp_path / "stand_in_libretro.so"
    core.write_bytes(b"\x7fELF" + b"\0retro_api_version\0retro_run\0retro_serialize\0")
    with pytest.raises(TargetError, match=r"exited \(status 3\).*the core would not load"):
        make_game(
            rom="pp-collect",
            core_file=str(core),
            retroarch=str(program),
            boot_state="bundled:pp-collect-gambatte",
        )


# -- `retroarch --version`: what it prints is read with a bound, and any bytes are text --


def _version_program(tmp_path: Path, body: str) -> Path:
    program = tmp_path / "retroarch"
    program.write_text(f"#!{sys.executable}\nimport os\n{body}")
    program.chmod(0o755)
    return program


def test_a_version_that_is_not_utf8_is_still_read(tmp_path: Path) -> None:
    program = _version_program(tmp_path, "os.write(1, b'RetroArch \\xff\\xfe v1\\n')\n")
    assert retroarch_version(str(program)) == "RetroArch \ufffd\ufffd v1"


def test_a_version_flood_is_read_only_to_its_bound(tmp_path: Path) -> None:
    program = _version_program(
        tmp_path,
        "os.write(1, b'RetroArch v9\\n')\nfor _ in range(64):\n    os.write(1, b'x' * (1 << 20))\n",
    )
    tracemalloc.start()
    try:
        assert retroarch_version(str(program)) == "RetroArch v9"
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 4 << 20


def test_a_version_that_never_ends_is_a_typed_error_in_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from playproof.adapters.retroarch import _game

    monkeypatch.setattr(_game, "VERSION_SECONDS", 0.5)
    program = _version_program(tmp_path, "import time\ntime.sleep(600)\n")
    started = time.monotonic()
    with pytest.raises(TargetError, match="--version"):
        retroarch_version(str(program))
    assert time.monotonic() - started < 5


@pytest.mark.parametrize(
    "override",
    [
        {"boot_cache": "/tmp/cache\0", "boot_frames": 5},
        {"rom_path": "rom\0.gb", "rom": None},
        {"info_dir": '/usr/share/libretro/info"\nnetwork_cmd_enable = "false'},
        {"core_dir": "/usr/lib/libretro\n"},
    ],
    ids=["nul-cache", "nul-rom", "config-line-info", "config-line-core-dir"],
)
def test_a_path_no_file_or_config_line_can_hold_is_refused_before_a_launch(
    override: dict[str, object],
) -> None:
    options: dict[str, object] = {"rom": "pp-collect", "boot_state": "bundled:pp-collect-gambatte"}
    options.update(override)
    if "boot_frames" in override:
        del options["boot_state"]
    with pytest.raises(TargetError, match="cannot hold"):
        make_game(**{k: v for k, v in options.items() if v is not None})
