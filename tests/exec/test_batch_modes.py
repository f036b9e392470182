"""Batch verification of trusted-recorder and platform-attested records, as of replay ones."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import desktop_specs
import pytest
from receipts_fakes import STEAM_APP, STEAM_USER, fake_provider
from toygame import ToyGame

import playproof
from playproof.adapters.desktop import TranscriptSealer
from playproof.adapters.receipts import Credentials, arun_receipts, read_receipts_spec
from playproof.core.contract import parse_contract
from playproof.core.game import VerificationMode
from playproof.core.record import RunRecord
from playproof.drivers import ScriptedDriver
from playproof.engine import EpisodeConfig
from playproof.exec import record_files, verify_many
from playproof.sign import SigningKey, VerifyingKey

EXE = [sys.executable, "-c", "from playproof.cli import main; main()"]
WORDS = ["north", "take", "north", "take", "quit"]


def _receipts_record() -> RunRecord:
    class Unlocking(ToyGame):
        def step(self, word: str) -> None:
            super().step(word)
            with server.lock:
                if self.count >= 2:
                    server.state.achievements["ACH_WIN"] = True

    with fake_provider("steam") as server:
        server.state.achievements = {"ACH_WIN": False}
        spec = read_receipts_spec(
            json.dumps(
                {
                    "name": "tf2-demo",
                    "provider": "steam",
                    "title_id": STEAM_APP,
                    "play": "toy",
                    "user_env": "STEAM_USER_ID",
                    "key_env": "STEAM_API_KEY",
                    "base_url": server.base_url,
                    "milestones": [{"id": "win", "achievement": "ACH_WIN"}],
                }
            )
        )
        config = EpisodeConfig(seed=0, max_turns=3, mode=VerificationMode.PLATFORM_ATTESTED)
        return asyncio.run(
            arun_receipts(
                spec,
                Unlocking(),
                ScriptedDriver(["inc", "inc", "wait"]),
                config,
                credentials=Credentials(STEAM_USER, "SENTINEL-KEY-batch"),
            )
        )


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Desktop records with their transcripts (one without, one tampered) and a receipts record.

    The contract is written beside the folder, the key's public half too.
    """
    base = tmp_path_factory.mktemp("modes")
    runs = base / "runs"
    runs.mkdir()
    key = SigningKey.generate()
    key.verifying_key.save(base / "trusted.pub.pem")
    key.save(base / "signing.pem")
    spec, contract = desktop_specs.cave(base / "cave")
    (base / "contract.json").write_text(json.dumps(contract.model_dump(mode="json", by_alias=True)))
    for name in ("cave-a", "cave-b", "cave-lost", "cave-tampered"):
        sealer = TranscriptSealer(key, runs / f"{name}.transcript.json")
        record = playproof.run(
            f"desktop:{spec}",
            ScriptedDriver(WORDS),
            contract=contract,
            mode=VerificationMode.TRUSTED_RECORDER,
            recorder=sealer,
            max_turns=len(WORDS),
        )
        (runs / f"{name}.json").write_bytes(playproof.sign_record(record, key).to_bytes())
    (runs / "cave-lost.transcript.json").unlink()
    tampered = runs / "cave-tampered.transcript.json"
    envelope = json.loads(tampered.read_text())
    envelope["signatures"][0]["sig"] = envelope["signatures"][0]["sig"][::-1]
    tampered.write_text(json.dumps(envelope))
    receipts = playproof.sign_record(_receipts_record(), key)
    (runs / "steam.json").write_bytes(receipts.to_bytes())
    return runs


def test_transcripts_beside_records_are_not_records(folder: Path) -> None:
    names = [p.name for p in record_files([folder])]
    assert names == [
        "cave-a.json",
        "cave-b.json",
        "cave-lost.json",
        "cave-tampered.json",
        "steam.json",
    ]


def test_each_record_is_verified_by_its_mode_and_a_missing_transcript_is_its_own_failure(
    folder: Path,
) -> None:
    key = VerifyingKey.load(folder.parent / "trusted.pub.pem")
    contract = parse_contract(json.loads((folder.parent / "contract.json").read_text()))
    verdicts = verify_many([folder], [key], executor="serial", contract=contract)
    by_name = {v.path.name: v.report for v in verdicts}
    assert by_name["cave-a.json"].clean, by_name["cave-a.json"].failed()
    assert by_name["cave-b.json"].clean
    assert "not re-executed" in (by_name["cave-a.json"].trust or "")
    lost = {c.id: c.reason for c in by_name["cave-lost.json"].failed()}
    assert "no transcript given" in lost["transcript-signed"]
    assert "transcript-signed" in {c.id for c in by_name["cave-tampered.json"].failed()}
    steam = by_name["steam.json"]
    assert steam.clean, steam.failed()
    assert steam.verified == ["win"]
    assert "Steam's Web API said so at" in (steam.trust or "")
    # Each verdict is what verifying that one file gives.
    alone = playproof.verify_signed(
        (folder / "cave-a.json").read_bytes(),
        [key],
        contract=contract,
        transcript=(folder / "cave-a.transcript.json").read_bytes(),
    )
    assert alone == by_name["cave-a.json"]


def test_verify_over_the_folder_with_a_contract_names_each_failure(folder: Path) -> None:
    base = folder.parent
    result = subprocess.run(
        [
            *EXE,
            "--json",
            "verify",
            str(folder),
            "--contract",
            str(base / "contract.json"),
            "--key",
            str(base / "trusted.pub.pem"),
            "--executor",
            "serial",
        ],
        cwd=base,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 1, result.stderr
    summary = json.loads(result.stdout)
    assert (summary["total"], summary["clean"], summary["rejected"]) == (5, 3, 2)
    rows = {Path(r["file"]).name: r for r in summary["records"]}
    assert rows["cave-lost.json"]["reasons"][0].startswith("transcript-signed: ")
    assert rows["cave-tampered.json"]["reasons"][0].startswith("transcript-signed: ")
