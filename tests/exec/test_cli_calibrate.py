"""``playproof calibrate | explore | derive | discover`` run as a user runs them."""

import json
import subprocess
import sys
from pathlib import Path

EXE = [
    sys.executable,
    "-c",
    "import playproof.cli._calibrate; from playproof.cli import main; main()",
]


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*EXE, *args], cwd=cwd, capture_output=True, text=True, timeout=300, check=False
    )


def test_calibrate_prints_a_table_and_fails_the_gate_for_2048(tmp_path: Path) -> None:
    done = cli("calibrate", "native/2048", "--executor", "serial", cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    for word in ("milestone", "earned by", "verdict", "tile-256", "random-walk@6", "gate fails"):
        assert word in done.stdout


def test_calibrate_json_on_the_pool(tmp_path: Path) -> None:
    done = cli("calibrate", "native/2048", "--json", "-j", "2", cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    report = json.loads(done.stdout)
    assert report["schema"] == "playproof/calibration/v1"
    assert report["passed"] is False


def test_an_address_without_ray_and_unknown_targets_are_clear_errors(tmp_path: Path) -> None:
    address = cli("calibrate", "native/2048", "--ray-address", "127.0.0.1:1", cwd=tmp_path)
    assert address.returncode == 3
    assert "--ray-address needs --executor ray" in address.stderr
    unknown = cli("calibrate", "native/nope", cwd=tmp_path)
    assert unknown.returncode == 3
    assert "unknown target" in unknown.stderr


def test_explore_writes_a_script_that_derive_can_build_on(tmp_path: Path) -> None:
    script = tmp_path / "found.txt"
    done = cli(
        "explore",
        "native/2048",
        "--goal",
        "tile-32",
        "--script",
        str(script),
        "--json",
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["found"]
    assert script.read_text().split() == report["inputs"]
    marks = tmp_path / "marks.json"
    marks.write_text(
        json.dumps(
            {
                "schema": "playproof/marks/v1",
                "game": "2048",
                "marks": [
                    {"id": "moved", "turn": 1, "kind": "state", "key": "moves"},
                    {
                        "id": "tile-32",
                        "turn": len(report["inputs"]),
                        "kind": "state",
                        "key": "max_tile",
                    },
                ],
            }
        )
    )
    out = tmp_path / "contract.json"
    derived = cli(
        "derive",
        "native/2048",
        "--marks",
        str(marks),
        "--reference",
        str(script),
        "--out",
        str(out),
        cwd=tmp_path,
    )
    assert derived.returncode == 0, derived.stderr
    contract = json.loads(out.read_text())
    assert contract["milestones"][1]["check"]["value"] == 32


def test_discover_refuses_a_game_without_memory_access(tmp_path: Path) -> None:
    done = cli("discover", "native/2048", cwd=tmp_path)
    assert done.returncode == 3
    assert "no memory access" in done.stderr
