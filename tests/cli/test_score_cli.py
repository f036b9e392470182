"""What `verify` prints about library versions that differ from the recorder's."""

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import playproof
from playproof.drivers import ScriptedDriver
from playproof.sign import SigningKey, sign_record
from playproof.targets import get_target

EXE = [sys.executable, "-c", "from playproof.cli import main; main()"]
CARTPOLE = get_target("gym/cartpole")


@pytest.fixture(scope="module")
def signed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any], SigningKey]:
    folder = tmp_path_factory.mktemp("score-cli")
    key = SigningKey.generate()
    key.verifying_key.save(folder / "trusted.pub.pem")
    inputs = CARTPOLE.reference[:120]
    record = playproof.run(CARTPOLE, ScriptedDriver(inputs), max_turns=len(inputs), worker=False)
    return folder, record.to_json(), key


def _verify(folder: Path, data: dict[str, Any], key: SigningKey) -> str:
    record = playproof.RunRecord.model_validate(data)
    (folder / "run.json").write_bytes(sign_record(record, key).to_bytes())
    result = subprocess.run(
        [*EXE, "verify", "run.json", "--key", "trusted.pub.pem", "--in-process"],
        cwd=folder, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    return result.stdout


def test_verify_warns_by_name_when_replay_diverges_under_other_versions(
    signed: tuple[Path, dict[str, Any], SigningKey],
) -> None:
    folder, data, key = signed
    data = {**data, "provenance": {**data["provenance"]}}
    data["provenance"]["libraries"] = {**data["provenance"]["libraries"], "gymnasium": "0.0.1"}
    data["claimed"] = [{**data["claimed"][0], "turn": data["claimed"][0]["turn"] + 1}]
    shown = " ".join(_verify(folder, data, key).split())
    assert "warning: replay did not reproduce the record" in shown
    assert "gymnasium" in shown
    assert "0.0.1 when recorded" in shown


def test_verify_notes_a_version_difference_when_replay_agrees(
    signed: tuple[Path, dict[str, Any], SigningKey],
) -> None:
    folder, data, key = signed
    data = {**data, "provenance": {**data["provenance"]}}
    data["provenance"]["libraries"] = {**data["provenance"]["libraries"], "numpy": "0.0.1"}
    shown = " ".join(_verify(folder, data, key).split())
    assert "verification of gym/cartpole: clean" in shown
    assert "note: library versions differ" in shown
    assert "numpy" in shown
    assert "warning:" not in shown
