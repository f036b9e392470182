"""RetroArch adapter speed against RetroArch running uncapped on its own, in one run.

- ``uncapped``: frames/s of ``retroarch --max-frames=N`` with the same core and
  content and null drivers (the difference of two frame counts, so start-up
  and shut-down cancel out);
- ``adapter``: frames/s of ``retroarch/pp-collect`` replaying its reference
  (each frame is one FRAMEADVANCE confirmed by a memory read over UDP), and the
  same for PyBoy on the same ROM for scale;
- the ratios between them;
- ``adhoc open``: seconds to open ``retroarch:gambatte:FILE`` (pp-collect) the
  first time (a counted boot in two launches, compared) and again from the
  boot-state cache (one launch), and their ratio.

    .venv/bin/python benchmarks/bench_retroarch.py [INPUTS]
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from playproof.adapters.retroarch._game import BUNDLED_ROMS
from playproof.targets.pyboy import pp_collect as pyboy_target
from playproof.targets.retroarch import pp_collect as retroarch_target

FEW, MANY = 2_000, 20_000
CONFIG = """video_driver = "null"
audio_driver = "null"
audio_enable = "false"
input_driver = "null"
menu_driver = "null"
gamemode_enable = "false"
video_vsync = "false"
config_save_on_exit = "false"
"""


def _uncapped_seconds(frames: int, folder: Path, core: Path) -> float:
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(folder), "DBUS_FATAL_WARNINGS": "0"}
    argv = [
        "retroarch", "--config", str(folder / "bench.cfg"), f"--max-frames={frames}",
        "-L", str(core), str(BUNDLED_ROMS["pp-collect"]),
    ]  # fmt: skip
    start = time.perf_counter()
    subprocess.run(argv, env=env, capture_output=True, timeout=300, check=True)
    return time.perf_counter() - start


def uncapped_fps() -> float:
    """Frames per second of RetroArch alone (best of three differences)."""
    core = Path(
        retroarch_target().spec.options.get("core_dir", "/usr/lib/x86_64-linux-gnu/libretro")
    )
    core = core / "gambatte_libretro.so"
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        (folder / "bench.cfg").write_text(CONFIG)
        best = 0.0
        for _ in range(3):
            few = _uncapped_seconds(FEW, folder, core)
            many = _uncapped_seconds(MANY, folder, core)
            best = max(best, (MANY - FEW) / max(many - few, 1e-9))
        return best


def adapter_fps(inputs: int) -> tuple[float, float]:
    """Frames per second of replaying ``inputs`` reference inputs: RetroArch adapter, PyBoy."""
    target = retroarch_target()
    script = target.reference[:inputs]
    frames = len(script) * int(target.spec.options.get("frames_per_input", 8))
    game = target.open(worker=False)
    try:
        game.reset(0)  # the first reset proves the boot state lands; not timed
        start = time.perf_counter()
        game.replay(0, script, target.contract)  # type: ignore[attr-defined]
        retroarch = frames / (time.perf_counter() - start)
    finally:
        game.close()
    pyboy = pyboy_target()
    session = pyboy.open(worker=False)
    try:
        start = time.perf_counter()
        session.replay(0, ("start", *script), target.contract)  # type: ignore[attr-defined]
        boy = (frames + 8) / (time.perf_counter() - start)
    finally:
        session.close()
    return retroarch, boy


def adhoc_open_seconds() -> tuple[float, float]:
    """Seconds to open an ad-hoc ``retroarch:gambatte:FILE`` target: cold, then from the cache."""
    from playproof.core.contract import parse_contract
    from playproof.targets import adhoc_target

    contract = parse_contract(
        {
            "schema": "playproof/contract/v1",
            "game": "bench",
            "milestones": [
                {"id": "m", "check": {"kind": "state", "key": "ram_c000", "op": ">=", "value": 1}}
            ],
        }
    )
    here = Path.cwd()
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        rom = folder / "pp-collect.gb"
        shutil.copyfile(BUNDLED_ROMS["pp-collect"], rom)
        os.chdir(folder)  # the boot-state cache lives under the working folder
        try:
            times = []
            for _ in range(2):
                start = time.perf_counter()
                game = adhoc_target(f"retroarch:gambatte:{rom}", contract).open(worker=False)
                times.append(time.perf_counter() - start)
                game.close()
        finally:
            os.chdir(here)
    return times[0], times[1]


def main() -> None:
    if shutil.which("retroarch") is None:
        sys.exit("retroarch is not installed (Debian: apt-get install retroarch libretro-gambatte)")
    inputs = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    alone = uncapped_fps()
    adapter, pyboy = adapter_fps(inputs)
    print(f"retroarch uncapped (--max-frames): {alone:10.0f} frames/s")
    print(
        f"retroarch adapter (UDP, confirmed): {adapter:9.1f} frames/s  ratio {adapter / alone:.5f}"
    )
    print(f"pyboy adapter, same ROM:            {pyboy:9.0f} frames/s  ratio {pyboy / alone:.3f}")
    cold, warm = adhoc_open_seconds()
    print(f"adhoc open, cold (two counted boots): {cold:7.1f} s")
    print(f"adhoc open, from the cache:           {warm:7.1f} s  ratio {warm / cold:.2f}")


if __name__ == "__main__":
    main()
