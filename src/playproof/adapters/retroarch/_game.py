"""A game session over one RetroArch process, driven as a black box over UDP.

Launch: a per-run folder holds a generated config (null video, audio, input,
joypad and menu drivers; its own HOME and save/state/screenshot folders;
network commands and the network gamepad on free loopback UDP ports) and the
content. RetroArch runs in the containment of ``playproof._containment`` (a
PID namespace where the system allows it, else a process group) and is ended
with all its descendants on :meth:`RetroArchGame.close`.

Determinism: every episode starts from a pinned boot state. ``LOAD_STATE``
does nothing while RetroArch is paused, but a ``LOAD_STATE`` sent together
with a ``FRAMEADVANCE`` acts in the one main-loop pass the advance runs, so
reset is "load the boot state, run one frame" in every launch. After that
the emulator only moves by counted frame advances, each confirmed by reading
``frame_channel`` (a memory variable that changes every frame): RetroArch
sends no reply to ``FRAMEADVANCE``, and advances sent too close together
merge. A boot state can also be made by counted frames (``boot_frames``):
RESET with the first advance, that many frames with no input, SAVE_STATE with
the next; made in two launches and compared by :func:`state_fingerprint`.
Inputs go through the network gamepad: a word holds its button for
``press_frames`` frames and releases it for the rest of ``frames_per_input``.

Evidence: ``engine`` = the declared memory channels (read with
``READ_CORE_MEMORY``); no frame hash and no save hash (the screen is shown by
screenshots, never pinned; state bytes are the core's business).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import select
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from playproof._bounded import read_bounded
from playproof._containment import containment
from playproof.adapters.retroarch._commands import JOYPAD_IDS, CommandClient, free_udp_port
from playproof.adapters.retroarch._options import WATCH_BYTES, RetroArchOptions
from playproof.adapters.retroarch._states import state_fingerprint
from playproof.core.canonical import digest
from playproof.core.contract import Contract
from playproof.core.evidence import Evidence
from playproof.core.game import (
    MAX_SEED,
    BuildIdentity,
    GameDescriptor,
    Platform,
    ReplayResult,
    VerificationMode,
)
from playproof.core.observation import Observation
from playproof.core.replay import replay_in_session
from playproof.errors import FormatError, TargetError

__all__ = [
    "ADAPTER_VERSION",
    "BUNDLED_ROMS",
    "BUNDLED_STATES",
    "VOCABULARY",
    "RetroArchGame",
    "check_core",
    "retroarch_version",
]

ADAPTER_VERSION = "playproof-retroarch/1"
VOCABULARY = ("noop", "a", "b", "up", "down", "left", "right")
"""No ``start``/``select``: measured on RetroArch 1.14, holding START on the network
gamepad runs the paused emulator freely (the gamepad's button bits alias frontend
hotkeys), so a word that holds it could not be replayed frame for frame."""
_BUTTONS = frozenset(VOCABULARY[1:])
_DATA = Path(__file__).parent
BUNDLED_ROMS = {"pp-collect": _DATA.parent / "pyboy" / "rom" / "pp_collect.gb"}
BUNDLED_STATES = {"pp-collect-gambatte": _DATA / "states" / "pp-collect-gambatte.state"}
"""Boot states shipped with playproof, named ``bundled:NAME`` in ``boot_state``."""

MAX_ROM_BYTES = 64 << 20
MAX_CORE_BYTES = 64 << 20
MAX_STATE_BYTES = 16 << 20
STARTUP_SECONDS = 15.0
"""How long RetroArch may take to load the core and content and answer GET_STATUS."""
POLL_GAP = 0.02
ADVANCE_GAP = 0.05
"""Least seconds between two FRAMEADVANCEs: a closer one can be taken for the same press
held down and dropped (measured: 5 to 8 frames in 120 lost without this gap)."""
"""Seconds between a FRAMEADVANCE and the read that confirms it (closer reads can swallow it)."""
STALL_SECONDS = 0.3
"""A frame channel unchanged this long after an advance: the game did not count that frame."""
SCREENSHOT_SECONDS = 5.0
VERSION_SECONDS = 10.0
"""How long ``retroarch --version`` may take."""
VERSION_CHARS = 4096
"""Characters of ``retroarch --version``'s output read for its version line."""
LOG_TAIL_BYTES = 400
"""Bytes read from the end of RetroArch's log to say why it exited."""
QUIT_SECONDS = 3.0
LOAD_ATTEMPTS = 6
SETTLE_SECONDS = 0.25
"""Quiet time before a state load: a load sent right after another command is dropped."""
_SEED_MODULUS = 0xFFFF
_HOTKEYS = (
    "enable_hotkey",
    "pause_toggle",
    "frame_advance",
    "hold_fast_forward",
    "toggle_fast_forward",
    "hold_slowmotion",
    "toggle_slowmotion",
    "rewind",
    "menu_toggle",
    "exit_emulator",
    "reset",
    "load_state",
    "save_state",
    "screenshot",
    "game_focus_toggle",
    "toggle_fullscreen",
    "close_content",
    "runahead_toggle",
)
"""Hotkeys unbound: a hotkey on a joypad button would act when the network gamepad presses it."""
_STATUS_PAUSED = "PAUSED"
_ELF_MAGIC = b"\x7fELF"
_LIBRETRO_SYMBOLS = (b"retro_api_version", b"retro_run", b"retro_serialize")
"""Every libretro core exports these (a core without ``retro_serialize`` cannot save states)."""
SAVE_SECONDS = 10.0
"""How long a counted boot waits for RetroArch to write its state file."""
_PASSED_ENV = ("PATH", "LANG", "LC_ALL", "TZ")


def retroarch_version(program: str = "retroarch") -> str:
    """``retroarch --version``'s line naming RetroArch; TargetError when it will not run.

    The program gets VERSION_SECONDS, and of what it prints only the start is
    read (VERSION_CHARS characters of its output, then of its errors); any
    bytes that are not UTF-8 read as replacement characters.
    """
    try:
        process = subprocess.Popen(
            [program, "--version"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
    except OSError as exc:
        raise TargetError(f"cannot run {program} --version ({exc}); install RetroArch") from exc
    try:
        out, err = _read_start(process, VERSION_CHARS * 4, VERSION_SECONDS)  # 4: UTF-8's widest
    finally:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)  # done, or printing past the bound
        process.wait()
        for stream in (process.stdout, process.stderr):
            if stream is not None:
                stream.close()
    if out is None:
        raise TargetError(
            f"cannot run {program} --version (no end within {VERSION_SECONDS:g} s); "
            "install RetroArch"
        )
    text = (out.decode(errors="replace") + err.decode(errors="replace"))[:VERSION_CHARS]
    return next((line.strip() for line in text.splitlines() if "RetroArch" in line), "unknown")


def _read_start(
    process: subprocess.Popen[bytes], limit: int, seconds: float
) -> tuple[bytes | None, bytes]:
    """Up to ``limit`` bytes of ``process``'s stdout and stderr, each read to its end or bound.

    A full stdout ends the reading (stderr would come after it). ``(None, b"")``
    when that did not happen within ``seconds``.
    """
    assert process.stdout is not None
    assert process.stderr is not None
    stdout = process.stdout.fileno()
    kept = {stdout: bytearray(), process.stderr.fileno(): bytearray()}
    readable = select.poll()
    for fd in kept:
        readable.register(fd, select.POLLIN)
    reading = set(kept)
    deadline = time.monotonic() + seconds
    while reading and len(kept[stdout]) < limit:
        left = deadline - time.monotonic()
        if left <= 0:
            return None, b""
        for fd, _ in readable.poll(max(left * 1000.0, 1.0)):
            chunk = os.read(fd, min(limit - len(kept[fd]), 65536)) if fd in reading else b""
            kept[fd] += chunk
            if not chunk or len(kept[fd]) >= limit:
                readable.unregister(fd)
                reading.discard(fd)
    return bytes(kept[stdout]), bytes(kept[process.stderr.fileno()])


def _sha256_file(path: Path, limit: int, what: str) -> tuple[bytes, str]:
    data = read_bounded(path, limit, what, TargetError)
    return data, hashlib.sha256(data).hexdigest()


def check_core(path: Path) -> str:
    """SHA-256 of the libretro core library at ``path``; TargetError when it is not one.

    A core is a shared library (ELF) exporting the libretro entry points; a
    file without them would make RetroArch fail late with a vaguer message.
    """
    data, sha = _sha256_file(path, MAX_CORE_BYTES, "libretro core")
    missing = [name.decode() for name in _LIBRETRO_SYMBOLS if name not in data]
    if not data.startswith(_ELF_MAGIC) or missing:
        why = (
            "not a shared library"
            if not data.startswith(_ELF_MAGIC)
            else "no " + ", ".join(missing)
        )
        raise TargetError(
            f"{path} is not a libretro core ({why}); give a core name such as gambatte "
            "or the path of a *_libretro.so"
        )
    return sha


def _cache_name(core_sha256: str, rom_sha256: str, frames: int) -> str:
    """The stem of a cached counted boot state: what it was made from."""
    return f"{core_sha256}-{rom_sha256}-{frames}"


class RetroArchGame:
    """A Game over one RetroArch process (see the module docstring for the contract)."""

    def __init__(self, options: RetroArchOptions) -> None:
        self.options = options
        rom_file = (
            BUNDLED_ROMS.get(options.rom or "") if options.rom else Path(options.rom_path or "")
        )
        if rom_file is None:
            raise TargetError(f"no bundled ROM {options.rom!r} (known: {', '.join(BUNDLED_ROMS)})")
        self._rom, self.rom_sha256 = _sha256_file(rom_file, MAX_ROM_BYTES, "ROM")
        if options.rom_sha256 and options.rom_sha256 != self.rom_sha256:
            raise TargetError(
                f"ROM {rom_file} has SHA-256 {self.rom_sha256}, not {options.rom_sha256}"
            )
        if options.core_file is not None:
            self._core_path = Path(options.core_file)
        else:
            self._core_path = Path(options.core_dir) / f"{options.core}_libretro.so"
            if not self._core_path.is_file():
                raise TargetError(
                    f"no libretro core {self._core_path}; "
                    f"install it (Debian: libretro-{options.core})"
                )
        self.core_sha256 = check_core(self._core_path)
        self._program = shutil.which(options.retroarch)
        if self._program is None:
            raise TargetError(
                f"{options.retroarch} is not installed (Debian: apt-get install retroarch)"
            )
        self._boot_state: bytes | None = None
        if options.boot_state:
            self._boot_state = self._read_boot_state(options.boot_state)
        elif options.boot_frames is not None:
            self._boot_state = self._cached_boot_state()
        self._channels = [(n, c.address, c.size) for n, c in sorted(options.channels.items())]
        self._frame: tuple[int, int] | None = None
        if options.frame_channel is not None:
            frame = options.channels[options.frame_channel]
            self._frame = (frame.address, frame.size)
        elif options.watch_address is not None:
            self._frame = (options.watch_address, WATCH_BYTES)
        self._closed = False
        self._process: subprocess.Popen[bytes] | None = None
        self._folder = Path(tempfile.mkdtemp(prefix="playproof-retroarch-"))
        self._client: CommandClient | None = None
        self._held: set[str] = set()
        self._reset_frame: bytes | None = None
        self._last_frame: bytes | None = None
        self._made_boot = False
        self._advanced_at = 0.0
        self.steps = 0
        try:
            self._launch()
            if options.boot_frames is not None and self._made_boot and options.boot_check:
                self._check_boot_reproduces()
            self._descriptor = self._describe()
            self.reset(0)
        except BaseException:
            self.close()
            raise

    # -- construction ------------------------------------------------------

    def _cache_file(self) -> Path | None:
        """Where the counted boot state of this core, ROM and frame count is kept, if anywhere."""
        folder, frames = self.options.boot_cache, self.options.boot_frames
        if folder is None or frames is None:
            return None
        return Path(folder) / f"{_cache_name(self.core_sha256, self.rom_sha256, frames)}.state"

    def _cached_boot_state(self) -> bytes | None:
        """The cached counted boot state when its digest checks out, else None (made anew).

        The cache keeps a state next to a file holding its SHA-256; a state that
        does not hash to it (edited, truncated) is not used.
        """
        path = self._cache_file()
        if path is None or not path.is_file():
            return None
        try:
            data, sha = _sha256_file(path, MAX_STATE_BYTES, "cached boot state")
            pinned = read_bounded(path.with_suffix(".sha256"), 64, "boot state digest", TargetError)
        except TargetError:
            return None
        return data if pinned.decode(errors="replace") == sha else None

    def _store_boot_state(self, data: bytes) -> None:
        path = self._cache_file()
        if path is None:
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        for target, payload in (
            (path, data),
            (path.with_suffix(".sha256"), hashlib.sha256(data).hexdigest().encode()),
        ):
            partial = target.with_name(f".{target.name}.{os.getpid()}.partial")
            partial.write_bytes(payload)
            partial.replace(target)

    def _check_boot_reproduces(self) -> None:
        """Make the counted boot state again in a second launch; refuse when it differs."""
        first = state_fingerprint(self._boot_state or b"", self._rom)
        self._end_process()
        self._boot_state = None
        self._launch()
        second = self._boot_state or b""
        if first != state_fingerprint(second, self._rom):
            a, b = first, state_fingerprint(second, self._rom)
            raise TargetError(
                f"core {self._core_path.name} made two different boot states for this ROM "
                f"in two launches ({a[:12]} and {b[:12]} after {self.options.boot_frames} "
                "frames): it does not reproduce its state, so no run on it could be verified; "
                "use another core"
            )
        self._store_boot_state(second)

    def _read_boot_state(self, name: str) -> bytes:
        bundled = name.removeprefix("bundled:") if name.startswith("bundled:") else None
        path = BUNDLED_STATES.get(bundled) if bundled is not None else Path(name)
        if path is None:
            raise TargetError(
                f"no bundled boot state {bundled!r} (known: {', '.join(BUNDLED_STATES)})"
            )
        data, sha = _sha256_file(path, MAX_STATE_BYTES, "boot state")
        expected = self.options.boot_state_sha256
        if expected and sha != expected:
            raise TargetError(
                f"boot state {name} has SHA-256 {sha[:16]}..., not {expected[:16]}..."
            )
        return data

    def _config(self, command_port: int, gamepad_port: int) -> str:
        folder = self._folder
        values = {
            "video_driver": "null",
            "audio_driver": "null",
            "audio_enable": "false",
            "input_driver": "null",
            "input_joypad_driver": "null",
            "menu_driver": "null",
            "midi_driver": "null",
            "network_cmd_enable": "true",
            "network_cmd_port": str(command_port),
            "network_remote_enable": "true",
            "network_remote_enable_user_p1": "true",
            "network_remote_base_port": str(gamepad_port),
            "libretro_directory": self.options.core_dir,
            "libretro_info_path": self.options.info_dir,
            "savefile_directory": str(folder / "saves"),
            "savestate_directory": str(folder / "states"),
            "screenshot_directory": str(folder / "screenshots"),
            "system_directory": str(folder / "system"),
            "config_save_on_exit": "false",
            "savestate_auto_load": "false",
            "savestate_auto_save": "false",
            "savestate_thumbnail_enable": "false",
            "sort_savestates_enable": "false",
            "sort_savefiles_enable": "false",
            "history_list_enable": "false",
            "auto_overrides_enable": "false",
            "auto_remaps_enable": "false",
            "game_specific_options": "false",
            "rewind_enable": "false",
            "cheevos_enable": "false",
            "pause_nonactive": "false",
            "gamemode_enable": "false",
            "video_vsync": "false",
            "state_slot": "0",
            "savestate_file_compression": "false",
            "input_menu_toggle_gamepad_combo": "0",
            "input_quit_gamepad_combo": "0",
            "input_hotkey_block_delay": "0",
        }
        for hotkey in _HOTKEYS:
            values[f"input_{hotkey}"] = "nul"
            values[f"input_{hotkey}_btn"] = "nul"
            values[f"input_{hotkey}_axis"] = "nul"
        return "".join(f'{key} = "{value}"\n' for key, value in values.items())

    def _launch(self) -> None:
        if self._process is not None:
            self._folder = Path(tempfile.mkdtemp(prefix="playproof-retroarch-"))
        folder = self._folder
        self._made_boot = False
        self._last_frame = None
        for name in ("home", "saves", "states", "screenshots", "system"):
            (folder / name).mkdir()
        # Cores may tell systems apart by the extension (mGBA: .gb or .gba): keep the ROM's.
        suffix = Path(self.options.rom_path or "rom.gb").suffix.lower()
        content = (
            folder / f"content{suffix if re.fullmatch(r'[.][a-z0-9]{1,8}', suffix) else '.gb'}"
        )
        content.write_bytes(self._rom)
        if self._boot_state is not None:
            (folder / "states" / "content.state").write_bytes(self._boot_state)
        command_port, gamepad_port = free_udp_port(), free_udp_port()
        config = folder / "retroarch.cfg"
        config.write_text(self._config(command_port, gamepad_port))
        env = {key: os.environ[key] for key in _PASSED_ENV if key in os.environ}
        # libgamemode aborts on a failed D-Bus connection unless D-Bus warnings are not fatal.
        env.update(HOME=str(folder / "home"), DBUS_FATAL_WARNINGS="0")
        argv = [
            self._program or "retroarch",
            "--config",
            str(config),
            "-L",
            str(self._core_path),
            str(content),
        ]
        command = containment().command(argv, env=env)
        self._log = (folder / "retroarch.log").open("wb")
        self._process = subprocess.Popen(
            command,
            env=env,
            cwd=folder,
            stdin=subprocess.DEVNULL,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self._client = CommandClient(command_port, gamepad_port)
        self._wait_started()
        if self._boot_state is None and self.options.boot_frames is not None:
            self._pause()
            self._boot_state = self._counted_boot_state(self.options.boot_frames)
            self._made_boot = True
        elif self._boot_state is None:
            self._boot_state = self._make_boot_state()
        self._pause()

    def _wait_started(self) -> None:
        client = self._require_client()
        deadline = time.monotonic() + STARTUP_SECONDS
        while time.monotonic() < deadline:
            self._check_alive()
            try:
                status = client.status(timeout=0.25)
            except TargetError:
                continue
            if status.state != "CONTENTLESS":
                return
        raise TargetError(f"RetroArch did not load the content within {STARTUP_SECONDS:g} s")

    def _check_alive(self) -> None:
        process = self._process
        if process is not None and process.poll() is not None:
            tail = self._log_tail().decode(errors="replace")
            raise TargetError(
                f"RetroArch exited (status {process.returncode}): {tail.strip()[-200:]}"
            )

    def _log_tail(self) -> bytes:
        """The last LOG_TAIL_BYTES of RetroArch's log (the log itself may be any size)."""
        try:
            with (self._folder / "retroarch.log").open("rb") as log:
                log.seek(max(log.seek(0, os.SEEK_END) - LOG_TAIL_BYTES, 0))
                return log.read(LOG_TAIL_BYTES)
        except OSError:
            return b""

    def _make_boot_state(self) -> bytes:
        """Run until ``ready_channel`` is non-zero, save a state while running, read it back."""
        client, options = self._require_client(), self.options
        ready = options.channels[options.ready_channel or ""]
        deadline = time.monotonic() + options.boot_seconds
        for name, value in sorted(options.boot_write.items()):
            channel = options.channels[name]
            client.write_memory(channel.address, value.to_bytes(channel.size, "little"))
        if options.boot_press:
            client.button(options.boot_press, True)
        while not any(client.read_memory(ready.address, ready.size)):
            if time.monotonic() > deadline:
                raise TargetError(
                    f"content never set ready channel {options.ready_channel!r} "
                    f"within {options.boot_seconds:g} s"
                )
            time.sleep(0.001)
        if options.boot_press:
            client.button(options.boot_press, False)
        state = self._folder / "states" / "content.state"
        client.send("SAVE_STATE")  # saving needs a running emulator
        while not (state.is_file() and state.stat().st_size > 0):
            self._check_alive()
            if time.monotonic() > deadline:
                raise TargetError("RetroArch saved no state; does the core support save states?")
            time.sleep(POLL_GAP)
        time.sleep(0.2)  # the file is written by a task: let it finish
        return read_bounded(state, MAX_STATE_BYTES, "boot state", TargetError)

    def _counted_boot_state(self, frames: int) -> bytes:
        """Reset the core, advance ``frames`` counted frames with no input, save the state.

        RESET and SAVE_STATE are both acted on only in a main-loop pass that
        runs a frame, so each goes with a FRAMEADVANCE: the reset is the first
        counted frame, and the save is taken with the frame after the last one.
        """
        self._advance("RESET")
        for _ in range(frames - 1):
            self._advance()
        state = self._folder / "states" / "content.state"
        state.unlink(missing_ok=True)
        self._advance("SAVE_STATE")
        deadline = time.monotonic() + SAVE_SECONDS
        size = -1
        while True:
            self._check_alive()
            current = state.stat().st_size if state.is_file() else 0
            if current > 0 and current == size:
                break
            if time.monotonic() > deadline:
                raise TargetError(
                    "RetroArch saved no state; does the core support save states "
                    "(are its info files installed)?"
                )
            size = current
            time.sleep(0.1)  # written by a task: settled once two looks agree
        return read_bounded(state, MAX_STATE_BYTES, "boot state", TargetError)

    def _pause(self) -> None:
        client = self._require_client()
        deadline = time.monotonic() + STARTUP_SECONDS
        while client.status().state != _STATUS_PAUSED:
            if time.monotonic() > deadline:
                raise TargetError("RetroArch would not pause")
            client.send("PAUSE_TOGGLE")
            time.sleep(0.1)

    def _describe(self) -> GameDescriptor:
        options = self.options.model_dump(
            mode="json",
            exclude={
                "rom_path",
                "boot_state",
                "core_dir",
                "core_file",
                "info_dir",
                "retroarch",
                "boot_cache",
                "boot_check",
                # Absent from records made before they existed: left out while unset.
                *(
                    name
                    for name in ("frame_channel", "watch_address", "boot_frames")
                    if getattr(self.options, name) is None
                ),
            },
        )
        identity = {
            "adapter": ADAPTER_VERSION,
            "options": options,
            "retroarch": retroarch_version(self._program or "retroarch"),
            "core_sha256": self.core_sha256,
            "rom_sha256": self.rom_sha256,
        }
        if self.options.boot_frames is None:
            identity["boot_state_sha256"] = hashlib.sha256(self._boot_state or b"").hexdigest()
        else:
            # A counted boot state is made again by a verifier: pin what it says of the game.
            identity["boot_state_fingerprint"] = state_fingerprint(
                self._boot_state or b"", self._rom
            )
        build = digest(identity)
        return GameDescriptor(
            id=self.options.game_id,
            vocabulary=VOCABULARY,
            build=BuildIdentity(id=f"{self.options.game_id}@{self.rom_sha256[:12]}", digest=build),
            platform=Platform(
                family="retroarch",
                modes=(VerificationMode.REPLAY,),
                capabilities=("batch-replay",),
            ),
        )

    def _require_client(self) -> CommandClient:
        if self._client is None or self._closed:
            raise TargetError("the RetroArch session is closed")
        return self._client

    # -- frame control -----------------------------------------------------

    def _frame_value(self) -> bytes:
        if self._frame is None:
            return b""  # nothing to watch: every advance waits the stall time
        address, size = self._frame
        return self._require_client().read_memory(address, size)

    def _advance(self, extra: str | None = None) -> bytes:
        """One frame: ``extra`` (if any) and a FRAMEADVANCE, then the frame channel's value.

        The advance is confirmed by ``frame_channel`` changing. A channel that
        stays put for ``STALL_SECONDS`` counts as a frame the game did not
        count (a game that switches its screen off skips its frame counter);
        the advance is never sent twice, since a slow one would then run two frames.
        """
        client = self._require_client()
        # Only advances move the frame channel: the value the last one landed on still holds.
        before = self._last_frame if self._last_frame is not None else self._frame_value()
        if extra:
            time.sleep(SETTLE_SECONDS)
            client.send(extra)
        wait = self._advanced_at + ADVANCE_GAP - time.monotonic()
        if wait > 0:
            time.sleep(wait)  # an advance right after the last one reads as a held key
        client.send("FRAMEADVANCE")
        start = self._advanced_at = time.monotonic()
        while True:
            time.sleep(POLL_GAP)
            now = self._frame_value()
            if now != before or time.monotonic() - start > STALL_SECONDS:
                self._last_frame = now
                return now

    def _release_all(self) -> None:
        client = self._require_client()
        for word in sorted(self._held):
            client.button(word, False)
        self._held.clear()

    def _load_boot_state(self) -> bytes:
        """Load the boot state with one frame; the frame channel's value where that lands.

        A load RetroArch drops only advances a frame, so a landing is trusted
        once two loads in a row (a frame apart) land on the same value, or on
        the value an earlier reset of this session landed on.
        """
        expected = self._reset_frame
        previous: bytes | None = None
        for _ in range(LOAD_ATTEMPTS):
            landed = self._advance("LOAD_STATE")
            if landed in (expected, previous):
                return landed
            previous = landed
            self._advance()
        raise TargetError(
            f"RetroArch did not load the boot state in {LOAD_ATTEMPTS} attempts; "
            "the core may not support save states (is info_dir set?)"
        )

    # -- Game protocol -----------------------------------------------------

    @property
    def descriptor(self) -> GameDescriptor:
        """Identity, vocabulary, build and platform of this session."""
        return self._descriptor

    def reset(self, seed: int) -> None:
        """Load the boot state and run one frame, then write the seed to ``seed_channel``."""
        if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= MAX_SEED:
            raise FormatError(f"seed must be an integer in 0..{MAX_SEED}")
        self._release_all()
        if self._reset_frame is None or self.steps or self._frame_value() != self._reset_frame:
            self._reset_frame = self._load_boot_state()
        if self.options.seed_channel:
            value = seed % _SEED_MODULUS + 1
            address = self.options.channels[self.options.seed_channel].address
            self._require_client().write_memory(address, bytes((value & 0xFF, value >> 8)))
        self.steps = 0

    def step(self, word: str) -> None:
        """Hold ``word``'s button for ``press_frames`` frames, then release; else just wait."""
        options, client = self.options, self._require_client()
        if word in _BUTTONS and word in JOYPAD_IDS:
            client.button(word, True)
            self._held.add(word)
            for _ in range(options.press_frames):
                self._advance()
            self._release_all()
            rest = options.frames_per_input - options.press_frames
        else:
            rest = options.frames_per_input
        for _ in range(rest):
            self._advance()
        self.steps += 1

    def _read_channels(self) -> dict[str, int]:
        if not self._channels:
            return {}
        low = min(address for _, address, _ in self._channels)
        high = max(address + size for _, address, size in self._channels)
        client = self._require_client()
        if high - low <= 256:
            block = client.read_memory(low, high - low)
            raw = {name: block[a - low : a - low + s] for name, a, s in self._channels}
        else:
            raw = {name: client.read_memory(a, s) for name, a, s in self._channels}
        return {name: int.from_bytes(value, "little") for name, value in raw.items()}

    def evidence(self) -> Evidence:
        """The declared memory channels."""
        return Evidence(engine=self._read_channels())

    def over(self) -> bool | None:
        """True while ``over_channel`` is non-zero; None without one."""
        name = self.options.over_channel
        if name is None:
            return None
        channel = self.options.channels[name]
        return any(self._require_client().read_memory(channel.address, channel.size))

    def observe(self) -> Observation:
        """The public numbers (the screen is not read back: RetroArch runs with null video)."""
        values = self._read_channels()
        summary = " ".join(f"{name} {values[name]}" for name in self.options.public)
        return Observation(text=summary or f"{self.options.game_id} frame")

    def close(self) -> None:
        """Quit RetroArch and end its process group and namespace (idempotent)."""
        if self._closed:
            return
        self._closed = True
        self._end_process()

    def _end_process(self) -> None:
        """Quit this launch's RetroArch, end its process group, remove its folder."""
        process, client = self._process, self._client
        if client is not None:
            with contextlib.suppress(OSError):
                client.send("QUIT")
            client.close()
        if process is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(QUIT_SECONDS)
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        log = getattr(self, "_log", None)
        if log is not None:
            log.close()
        shutil.rmtree(self._folder, ignore_errors=True)

    # -- optional capabilities --------------------------------------------

    @property
    def pid(self) -> int:
        """The process RetroArch (or its containment) runs as."""
        return self._process.pid if self._process is not None else -1

    def replay(
        self, seed: int, inputs: Sequence[str], contract: Contract, *, trace: bool = False
    ) -> ReplayResult:
        """Replay a log step by step in this session."""
        return replay_in_session(self, seed, inputs, contract, trace=trace)

    def memory(self) -> dict[str, tuple[int, bytes]]:
        """Game Boy work RAM (0xC000-0xDFFF), for channel discovery."""
        return {"wram": (0xC000, self._require_client().read_memory(0xC000, 0x2000))}

    def screenshot(self) -> bytes:
        """A PNG of the current screen (RetroArch's SCREENSHOT works with null video)."""
        client = self._require_client()
        folder = self._folder / "screenshots"
        before = set(folder.iterdir())
        client.send("SCREENSHOT")
        deadline = time.monotonic() + SCREENSHOT_SECONDS
        while time.monotonic() < deadline:
            new = sorted(set(folder.iterdir()) - before)
            if new:
                time.sleep(0.1)
                return read_bounded(new[0], MAX_STATE_BYTES, "screenshot", TargetError)
            time.sleep(POLL_GAP)
        raise TargetError("RetroArch wrote no screenshot")
