"""Provenance is signed, old records still verify, and library differences are named."""

import base64
import json
from pathlib import Path
from typing import Any

import pytest

import playproof
from playproof.drivers import ScriptedDriver
from playproof.sign import SigningKey, VerifyingKey, sign_record
from playproof.targets import get_target, target_libraries

FIXTURES = Path(__file__).parents[1] / "fixtures" / "records"
KEY = SigningKey.generate()
CARTPOLE = get_target("gym/cartpole")


def _predicate(envelope: dict[str, Any]) -> dict[str, Any]:
    predicate: dict[str, Any] = json.loads(base64.b64decode(envelope["payload"]))["predicate"]
    return predicate


def test_a_signed_record_from_before_this_format_change_still_verifies() -> None:
    envelope = (FIXTURES / "v1-2048-signed.json").read_bytes()
    key = VerifyingKey.load(FIXTURES / "v1-2048-signing.pub.pem")
    report = playproof.verify_signed(envelope, [key])
    assert report.clean, report.failed()
    assert report.score is not None
    assert str(report.score) == "7 of 7"
    assert report.milestones_identity == 0
    assert report.library_differences == []


def test_a_bare_record_from_before_this_format_change_still_verifies() -> None:
    bare = json.loads((FIXTURES / "v1-2048-bare.json").read_text())
    report = playproof.verify_record(bare)
    assert report.clean, report.failed()
    assert report.earned == report.earnable == 7


@pytest.fixture(scope="module")
def record() -> playproof.RunRecord:
    inputs = CARTPOLE.reference[:120]
    return playproof.run(CARTPOLE, ScriptedDriver(inputs), max_turns=len(inputs), worker=False)


def test_provenance_names_the_libraries_and_the_checkout_and_is_signed(
    record: playproof.RunRecord,
) -> None:
    found = record.provenance
    assert set(found.libraries) == {"gymnasium", "numpy"}
    assert found.libraries == target_libraries(CARTPOLE)
    assert found.settings is not None
    assert found.settings.worker is False
    assert record.target.calibrated is True
    if (Path(playproof.__file__).parents[2] / ".git").exists():
        assert found.source is not None
        assert len(found.source.commit) in (40, 64)
    signed = _predicate(sign_record(record, KEY).to_json())
    assert signed["provenance"]["libraries"] == found.libraries
    # Editing the provenance breaks the signature: it is covered like the rest.
    envelope = sign_record(record, KEY).to_json()
    statement = json.loads(base64.b64decode(envelope["payload"]))
    statement["predicate"]["provenance"]["libraries"]["numpy"] = "0.0.0"
    envelope["payload"] = base64.b64encode(json.dumps(statement).encode()).decode()
    report = playproof.verify_signed(envelope, [KEY.verifying_key], worker=False)
    assert not report.clean
    assert any(c.id == "signature-valid" and not c.passed for c in report.checks)


def _resigned(record: playproof.RunRecord, **edits: Any) -> dict[str, Any]:
    data = record.to_json()
    for path, value in edits.items():
        node = data
        *parents, leaf = path.split("__")
        for part in parents:
            node = node[part]
        node[leaf] = value
    return sign_record(playproof.RunRecord.model_validate(data), KEY).to_json()


def test_a_diverging_replay_under_other_library_versions_is_warned_by_name(
    record: playproof.RunRecord,
) -> None:
    libraries = dict(record.provenance.libraries)
    libraries["gymnasium"] = "0.0.1"
    claimed = [c.model_dump() for c in record.claimed]
    assert claimed
    claimed[0]["turn"] += 1  # a claim replay does not reproduce
    envelope = _resigned(record, provenance__libraries=libraries, claimed=claimed)
    report = playproof.verify_signed(envelope, [KEY.verifying_key], worker=False)
    assert not report.clean
    assert [d.name for d in report.library_differences] == ["gymnasium"]
    assert report.library_differences[0].recorded == "0.0.1"
    assert len(report.warnings) == 1
    assert f"gymnasium {record.provenance.libraries['gymnasium']} here" in report.warnings[0]
    assert "0.0.1 when recorded" in report.warnings[0]


def test_a_version_difference_alone_is_noted_not_warned(record: playproof.RunRecord) -> None:
    libraries = {**record.provenance.libraries, "numpy": "0.0.1"}
    envelope = _resigned(record, provenance__libraries=libraries)
    report = playproof.verify_signed(envelope, [KEY.verifying_key], worker=False)
    assert report.clean, report.failed()
    assert [d.name for d in report.library_differences] == ["numpy"]
    assert report.warnings == []
