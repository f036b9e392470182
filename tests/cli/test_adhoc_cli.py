"""Ad-hoc targets through the command line: run, show and verify, labelled uncalibrated."""

import hashlib
import json
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

import playproof
from playproof.core.contract import parse_contract
from playproof.targets import adhoc_target

EXE = [sys.executable, "-c", "from playproof.cli import main; main()"]
ROM = Path(playproof.__file__).parent / "adapters" / "pyboy" / "rom" / "pp_collect.gb"
FIXTURES = Path(__file__).parents[1] / "fixtures" / "records"
PLACEHOLDER = {"id": "x", "check": {"kind": "frame-hash", "hash": "0" * 64}}


def cli(*args: str, cwd: Path, check: bool = True) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        [*EXE, *args], cwd=cwd, capture_output=True, text=True, timeout=180, check=False
    )
    if check and result.returncode != 0:
        raise AssertionError(f"exit {result.returncode}\n{result.stdout}\n{result.stderr}")
    return result


def frame_hashes(spec: str, inputs: Sequence[str]) -> list[str]:
    """The frame hash after each input, read off the real game (never typed by hand)."""
    placeholder = parse_contract(
        {"schema": "playproof/contract/v1", "game": "any", "milestones": [PLACEHOLDER]}
    )
    game = adhoc_target(spec, placeholder).open(worker=False)
    try:
        game.reset(0)
        found = []
        for word in inputs:
            game.step(word)
            digest = game.evidence().frame_hash
            assert digest is not None
            found.append(digest)
        return found
    finally:
        game.close()


def write(path: Path, document: Any) -> Path:
    path.write_text(json.dumps(document) if not isinstance(document, str) else document)
    return path


def contract(game: str, milestones: list[dict[str, Any]]) -> dict[str, Any]:
    return {"schema": "playproof/contract/v1", "game": game, "milestones": milestones}


def at_least(mid: str, key: str, value: int) -> dict[str, Any]:
    return {"id": mid, "check": {"kind": "state", "key": key, "op": ">=", "value": value}}


CARTPOLE_INPUTS = ["left", "right"] * 6


@pytest.fixture(scope="module")
def cartpole(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A signed CartPole run against a contract with one identity milestone; (folder, record)."""
    folder = tmp_path_factory.mktemp("adhoc-gym")
    identity = frame_hashes("gym:CartPole-v1", CARTPOLE_INPUTS)[3]
    write(
        folder / "contract.json",
        contract(
            "gym-cartpole-v1",
            [
                at_least("steps-5", "steps", 5),
                {"id": "at-4", "check": {"kind": "frame-hash", "hash": identity}},
                at_least("steps-99", "steps", 99),
            ],
        ),
    )  # fmt: skip
    write(folder / "inputs.txt", "\n".join(CARTPOLE_INPUTS) + "\n")
    run = cli(
        "run", "gym:CartPole-v1", "--contract", "contract.json", "--agent", "script:inputs.txt",
        "--out", "run.json", "--key-dir", "keys", cwd=folder,
    )  # fmt: skip
    assert "gym:CartPole-v1 (uncalibrated)" in run.stdout
    assert "1 of 2 earnable (2 of 3 verified, 1 of 1 replay-identity)" in run.stdout
    return folder, folder / "run.json"


def test_an_adhoc_gym_run_verifies_with_its_contract(cartpole: tuple[Path, Path]) -> None:
    folder, record = cartpole
    report = json.loads(
        cli("verify", str(record), "--contract", "contract.json", "--key-dir", "keys", "--json",
            cwd=folder).stdout
    )  # fmt: skip
    assert report["verdict"] == "clean"
    assert report["target"] == "gym:CartPole-v1 (uncalibrated)"
    assert report["calibrated"] is False
    assert (report["earned"], report["earnable"]) == (1, 2)
    assert report["identity_verified"] == ["at-4"]
    assert report["score"] == "1 of 2 earnable (2 of 3 verified, 1 of 1 replay-identity)"
    human = cli("verify", str(record), "--contract", "contract.json", "--key-dir", "keys",
                cwd=folder).stdout  # fmt: skip
    assert "uncalibrated" in human
    assert "1 of 2 earnable" in human


def test_show_labels_an_adhoc_record_uncalibrated(cartpole: tuple[Path, Path]) -> None:
    folder, record = cartpole
    shown = json.loads(cli("show", str(record), "--json", cwd=folder).stdout)
    assert shown["target_label"] == "gym:CartPole-v1 (uncalibrated)"
    assert shown["calibrated"] is False
    assert (shown["earned"], shown["earnable"], shown["identity_total"]) == (1, 2, 1)
    assert shown["provenance"]["libraries"].keys() == {"gymnasium", "numpy"}
    assert shown["provenance"]["settings"]["agent"] == "script:inputs.txt"
    assert "uncalibrated" in cli("show", str(record), cwd=folder).stdout


def test_verifying_an_adhoc_record_without_its_contract_says_what_to_pass(
    cartpole: tuple[Path, Path],
) -> None:
    folder, record = cartpole
    result = cli("verify", str(record), "--key-dir", "keys", "--json", cwd=folder, check=False)
    assert result.returncode == 1
    report = json.loads(result.stdout)
    assert report["target"] == "gym:CartPole-v1 (uncalibrated)"
    assert any("--contract" in c["reason"] for c in report["checks"] if not c["passed"])


GB_INPUTS = ["start", "noop", "right", "right", "right"]


@pytest.fixture(scope="module")
def game_boy(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    folder = tmp_path_factory.mktemp("adhoc-gb")
    spec = f"gb:{ROM}"
    hashes = frame_hashes(spec, GB_INPUTS)
    write(
        folder / "contract.json",
        contract(
            "pp-collect-rom",
            [
                {"id": "title-gone", "check": {"kind": "frame-hash", "hash": hashes[0]}},
                {"id": "walked", "requires": ["title-gone"],
                 "check": {"kind": "frame-hash", "hash": hashes[-1]}},
            ],
        ),
    )  # fmt: skip
    write(folder / "inputs.txt", "\n".join(GB_INPUTS) + "\n")
    cli(
        "run", spec, "--contract", "contract.json", "--agent", "script:inputs.txt",
        "--out", "run.json", "--key-dir", "keys", cwd=folder,
    )  # fmt: skip
    return folder, folder / "run.json"


def test_an_adhoc_game_boy_run_verifies_and_pins_its_rom(game_boy: tuple[Path, Path]) -> None:
    folder, record = game_boy
    report = json.loads(
        cli("verify", str(record), "--contract", "contract.json", "--key-dir", "keys", "--json",
            cwd=folder).stdout
    )  # fmt: skip
    assert report["verdict"] == "clean"
    assert report["score"] == "0 of 0 earnable (2 of 2 verified, 2 of 2 replay-identity)"
    shown = json.loads(cli("show", str(record), "--json", cwd=folder).stdout)
    assert shown["provenance"]["roms"] == {
        "pp_collect.gb": hashlib.sha256(ROM.read_bytes()).hexdigest()
    }
    # The same bytes under another name verify: the digest, not the path, is pinned.
    shutil.copyfile(ROM, folder / "copy.gb")
    same = cli("verify", str(record), "--contract", "contract.json", "--key-dir", "keys",
               "--target", "gb:copy.gb", "--json", cwd=folder)  # fmt: skip
    assert json.loads(same.stdout)["verdict"] == "clean"


def test_verify_refuses_a_different_rom(game_boy: tuple[Path, Path]) -> None:
    folder, record = game_boy
    blob = bytearray(ROM.read_bytes())
    blob[0x300] ^= 0x5A
    (folder / "other.gb").write_bytes(bytes(blob))
    result = cli("verify", str(record), "--contract", "contract.json", "--key-dir", "keys",
                 "--target", "gb:other.gb", "--json", cwd=folder, check=False)  # fmt: skip
    assert result.returncode == 1
    report = json.loads(result.stdout)
    pinned = next(c for c in report["checks"] if c["id"] == "target-pinned")
    assert not pinned["passed"]
    assert "the record pins" in pinned["reason"]


@pytest.mark.slow
def test_an_adhoc_ale_run_verifies(tmp_path: Path) -> None:
    pytest.importorskip("ale_py")
    write(
        tmp_path / "contract.json",
        contract("ale-pong", [at_least("frames-40", "frame", 40)]),
    )  # fmt: skip
    write(tmp_path / "inputs.txt", "noop\nup\ndown\n" * 4)
    run = json.loads(
        cli("run", "ale:pong", "--contract", "contract.json", "--agent", "script:inputs.txt",
            "--out", "run.json", "--key-dir", "keys", "--json", cwd=tmp_path).stdout
    )  # fmt: skip
    assert run["target_label"] == "ale:pong (uncalibrated)"
    assert run["provenance"]["roms"].keys() == {"pong"}
    report = json.loads(
        cli("verify", "run.json", "--contract", "contract.json", "--key-dir", "keys", "--json",
            cwd=tmp_path).stdout
    )  # fmt: skip
    assert report["verdict"] == "clean"
    assert report["score"] == "1 of 1"


def test_a_record_signed_before_this_format_change_verifies_through_the_cli(
    tmp_path: Path,
) -> None:
    result = cli(
        "verify", str(FIXTURES / "v1-2048-signed.json"),
        "--key", str(FIXTURES / "v1-2048-signing.pub.pem"), "--json", cwd=tmp_path,
    )  # fmt: skip
    report = json.loads(result.stdout)
    assert report["verdict"] == "clean"
    assert report["score"] == "7 of 7"
    bare = cli("verify", "--unsigned", str(FIXTURES / "v1-2048-bare.json"), "--json", cwd=tmp_path)
    assert json.loads(bare.stdout)["verdict"] == "clean"


@pytest.mark.parametrize(
    ("name", "stem"),
    [
        ("native/2048", "native-2048"),
        ("gb:../roms/My Game.gb", "gb-roms-My-Game-gb"),
        ("gym:ALE/Pong-v5", "gym-ALE-Pong-v5"),
    ],
)
def test_default_record_names_of_adhoc_targets_are_portable(name: str, stem: str) -> None:
    from playproof.cli._files import default_record_path

    path = default_record_path(name, 0)
    assert path.parent.name == "playproof-runs"
    assert path.name.startswith(f"{stem}-s0-")


def test_an_adhoc_campaign_is_signed_and_labelled(cartpole: tuple[Path, Path]) -> None:
    folder, _ = cartpole
    done = cli(
        "campaign", "gym:CartPole-v1", "--contract", "contract.json", "--agent",
        "script:inputs.txt", "--segment-turns", "5", "--ledger", "campaign.ledger.json",
        "--out", "campaign.json", "--key-dir", "keys", "--json", cwd=folder,
    )  # fmt: skip
    summary = json.loads(done.stdout)
    assert summary["target_label"] == "gym:CartPole-v1 (uncalibrated)"
    assert summary["score"] == "1 of 2 earnable (2 of 3 verified, 1 of 1 replay-identity)"
    report = json.loads(
        cli("verify", "campaign.json", "--contract", "contract.json", "--key-dir", "keys",
            "--json", cwd=folder).stdout
    )  # fmt: skip
    assert report["verdict"] == "clean"
