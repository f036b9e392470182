"""`playproof run --mode trusted-recorder desktop:SPEC` and `verify`, as a user runs them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import desktop_specs
import pytest

EXE = [sys.executable, "-c", "from playproof.cli import main; main()"]


def cli(*args: str, cwd: Path, check: bool = True) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        [*EXE, *args], cwd=cwd, capture_output=True, text=True, timeout=120, check=False
    )
    if check and result.returncode != 0:
        raise AssertionError(f"exit {result.returncode}\n{result.stdout}\n{result.stderr}")
    return result


@pytest.fixture(scope="module")
def played(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("desktop-cli")
    _, contract = desktop_specs.cave(folder / "cave")
    (folder / "contract.json").write_text(
        json.dumps(contract.model_dump(mode="json", by_alias=True))
    )
    (folder / "script.txt").write_text("north\ntake\nnorth\ntake\nquit\n")
    cli(
        "run",
        "desktop:cave/spec.toml",
        "--agent",
        "script:script.txt",
        "--contract",
        "contract.json",
        "--mode",
        "trusted-recorder",
        "--out",
        "rec.json",
        cwd=folder,
    )
    return folder


def test_run_writes_the_record_and_its_signed_transcript(played: Path) -> None:
    record = json.loads(base64_payload(played / "rec.json"))
    assert record["target"]["verification_mode"] == "trusted-recorder"
    assert set(record["recorder"]) == {"transcript_sha256", "key_id"}
    envelope = json.loads((played / "rec.transcript.json").read_text())
    assert envelope["payloadType"] == "application/vnd.playproof.transcript+json"


def test_verify_says_which_trust_it_relied_on(played: Path) -> None:
    result = cli("verify", "rec.json", "--contract", "contract.json", cwd=played)
    text = " ".join(result.stdout.split())
    assert "clean" in text
    assert "transcript-signed" in text
    assert "attested this transcript; the game was not re-executed" in text
    shown = json.loads(
        cli("--json", "verify", "rec.json", "--contract", "contract.json", cwd=played).stdout
    )
    assert shown["verdict"] == "clean"
    assert "not re-executed" in shown["trust"]


def test_verify_without_the_transcript_is_rejected_by_name(played: Path) -> None:
    moved = played / "elsewhere"
    moved.mkdir(exist_ok=True)
    (moved / "rec.json").write_bytes((played / "rec.json").read_bytes())
    result = cli(
        "verify", "elsewhere/rec.json", "--contract", "contract.json", cwd=played, check=False
    )
    assert result.returncode != 0
    assert "no transcript given" in " ".join(result.stdout.split())


def test_a_recorder_key_the_verifier_does_not_trust_is_rejected_by_name(played: Path) -> None:
    cli("keygen", "--key-dir", "recorder", cwd=played)
    cli(
        "run",
        "desktop:cave/spec.toml",
        "--agent",
        "script:script.txt",
        "--contract",
        "contract.json",
        "--mode",
        "trusted-recorder",
        "--out",
        "rec2.json",
        "--recorder-key",
        "recorder/signing.pem",
        cwd=played,
    )
    signer = ".playproof/keys/signing.pub.pem"
    result = cli(
        "--json",
        "verify",
        "rec2.json",
        "--contract",
        "contract.json",
        "--key",
        signer,
        cwd=played,
        check=False,
    )
    assert result.returncode != 0
    report = json.loads(result.stdout)
    failed = {c["id"]: c["reason"] for c in report["checks"] if not c["passed"]}
    assert list(failed) == ["transcript-signed", "target-pinned", "claims-reproduced"]
    assert "is not trusted" in failed["transcript-signed"]
    trusted = cli(
        "verify",
        "rec2.json",
        "--contract",
        "contract.json",
        "--key",
        signer,
        "--key",
        "recorder/signing.pub.pem",
        cwd=played,
    )
    assert "clean" in trusted.stdout


def base64_payload(path: Path) -> bytes:
    import base64

    envelope = json.loads(path.read_text())
    statement = json.loads(base64.b64decode(envelope["payload"]))
    return json.dumps(statement["predicate"]).encode()
