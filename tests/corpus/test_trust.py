"""Signed corpora, trusted and untrusted grades, the signed reward state, TSVs, feedback modes."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from controllers import (
    CONTROLLER,
    SYNTHETIC_CANDIDATE,
    sign_test_corpus,
    synthetic,
    synthetic_corpus,
    synthetic_roms,
    synthetic_task,
)
from typer.testing import CliRunner

import playproof.cli._corpus  # noqa: F401  (registers the commands)
from playproof.cli._app import app
from playproof.corpus import (
    GradeRecord,
    load_answers,
    load_corpus,
    load_manifest,
    shipped_paths,
)
from playproof.corpus._shipped import SHIPPED
from playproof.corpus._task import task_progress
from playproof.corpus._trust import (
    check_corpus_signature,
    load_controller_keys,
    read_signature,
    shipped_controller_key,
    signature_path,
)
from playproof.errors import FormatError


def _invoke(*args: str) -> Any:
    return CliRunner().invoke(app, list(args), catch_exceptions=False)


def _grade(manifest: Path, out: Path, *extra: str) -> dict[str, Any]:
    result = _invoke(
        "--json",
        "grade",
        "--candidate",
        f"{sys.executable} {SYNTHETIC_CANDIDATE}",
        "--runtime",
        "python",
        "--corpus",
        str(manifest),
        "--answers",
        str(manifest.with_name("answers.json")),
        "--roms",
        str(manifest.with_name("roms")),
        "--case-seconds",
        "20",
        "--out",
        str(out),
        "--key-dir",
        str(out.parent / "keys"),
        *extra,
    )
    assert result.exit_code == 0, result.output
    summary: dict[str, Any] = json.loads(result.output)
    return summary


def _record(path: Path) -> GradeRecord:
    import base64

    envelope = json.loads(path.read_text())
    statement = json.loads(base64.b64decode(envelope["payload"]))
    return GradeRecord.model_validate(statement["predicate"])


@pytest.mark.parametrize("name", SHIPPED)
def test_every_shipped_corpus_is_signed_by_the_shipped_controller_key(name: str) -> None:
    manifest_path, answers_path, roms = shipped_paths(name)
    manifest = load_manifest(manifest_path)
    trust = check_corpus_signature(
        load_corpus(manifest, roms),
        load_answers(answers_path, manifest),
        read_signature(signature_path(manifest_path)),
        [shipped_controller_key()],
    )
    assert trust.trusted, trust.reason
    assert trust.key_id == shipped_controller_key().key_id
    assert load_controller_keys() == [shipped_controller_key()]


def test_an_unsigned_corpus_grades_untrusted_with_reward_zero(tmp_path: Path) -> None:
    manifest = synthetic_corpus(tmp_path / "corpus")
    summary = _grade(manifest, tmp_path / "grade.json")
    assert (summary["passed"], summary["trust"], summary["reward"]) == (2, "untrusted", 0)
    assert "no signature" in summary["trust_reason"]
    record = _record(tmp_path / "grade.json")
    assert (record.trust, record.reward, record.controller_key) == ("untrusted", 0, None)


def test_a_corpus_signed_by_a_key_not_trusted_grades_untrusted(tmp_path: Path) -> None:
    manifest = synthetic_corpus(tmp_path / "corpus")
    sign_test_corpus(
        manifest,
        load_answers(manifest.with_name("answers.json"), load_manifest(manifest)),
        manifest.with_name("roms"),
    )
    summary = _grade(manifest, tmp_path / "grade.json")  # trusts only the shipped key
    assert (summary["trust"], summary["reward"]) == ("untrusted", 0)
    assert "signature-valid" in summary["trust_reason"]


def test_a_trusted_grade_binds_the_corpus_and_verify_grade_checks_it(tmp_path: Path) -> None:
    manifest = synthetic_corpus(tmp_path / "corpus")
    public = sign_test_corpus(
        manifest,
        load_answers(manifest.with_name("answers.json"), load_manifest(manifest)),
        manifest.with_name("roms"),
    )
    out = tmp_path / "grade.json"
    summary = _grade(manifest, out, "--controller-key", str(public))
    assert (summary["passed"], summary["trust"], summary["reward"]) == (2, "trusted", 2)
    record = _record(out)
    loaded = load_manifest(manifest)
    assert (record.corpus_digest, record.corpus_version) == (loaded.digest, loaded.version)
    assert record.controller_key == CONTROLLER.key_id

    def verify(*extra: str) -> Any:
        return _invoke("verify-grade", str(out), "--key-dir", str(tmp_path / "keys"), *extra)

    checked = verify("--manifest", str(manifest), "--controller-key", str(public))
    assert checked.exit_code == 0, checked.output
    shown = " ".join(checked.output.split())  # the console wraps long lines
    assert f"trust: trusted (controller key {CONTROLLER.key_id}); reward 2" in shown
    # Without a manifest nothing checks the corpus signature: the claim is shown as a claim.
    bare = " ".join(verify().output.split())
    assert "trust: trusted" in bare
    assert "as the record claims: not checked without --manifest" in bare
    # Without trusting the controller, the record's claim of a trusted corpus fails.
    assert verify("--manifest", str(manifest)).exit_code != 0
    # A manifest of another version is another corpus.
    data = json.loads(manifest.read_text())
    data["version"] = "2"
    other = tmp_path / "other" / "manifest.json"
    other.parent.mkdir()
    other.write_text(json.dumps(data))
    rejected = verify("--manifest", str(other), "--controller-key", str(public))
    assert rejected.exit_code != 0
    assert "corpus-pinned: FAIL" in rejected.output


def test_verify_grade_reports_an_untrusted_grade(tmp_path: Path) -> None:
    manifest = synthetic_corpus(tmp_path / "corpus")
    out = tmp_path / "grade.json"
    _grade(manifest, out)
    checked = _invoke(
        "--json",
        "verify-grade",
        str(out),
        "--manifest",
        str(manifest),
        "--key-dir",
        str(tmp_path / "keys"),
    )
    assert checked.exit_code == 0, checked.output
    assert json.loads(checked.output)["trust"] == "untrusted"


def test_a_grade_record_whose_reward_disagrees_with_its_trust_is_refused(tmp_path: Path) -> None:
    manifest = synthetic_corpus(tmp_path / "corpus")
    _grade(manifest, tmp_path / "grade.json")
    data = _record(tmp_path / "grade.json").model_dump(mode="json")
    for change in ({"reward": 2}, {"trust": "trusted"}, {"controller_key": "k"}):
        with pytest.raises(ValueError, match=r"reward|controller key"):
            GradeRecord.model_validate({**data, **change})
    GradeRecord.model_validate({**data, "trust": "trusted", "reward": 2, "controller_key": "k"})


def test_corpus_sign_writes_a_signature_the_grader_trusts(tmp_path: Path) -> None:
    manifest = synthetic_corpus(tmp_path / "corpus")
    key = tmp_path / "controller.pem"
    CONTROLLER.save(key)
    public = tmp_path / "controller.pub.pem"
    public.write_bytes(CONTROLLER.verifying_key.to_pem())
    signed = _invoke(
        "--json", "corpus", "sign", "--key", str(key), "--corpus", str(manifest.parent)
    )
    assert signed.exit_code == 0, signed.output
    assert json.loads(signed.output)["key_id"] == CONTROLLER.key_id
    assert signature_path(manifest).exists()
    summary = _grade(manifest, tmp_path / "grade.json", "--controller-key", str(public))
    assert (summary["trust"], summary["reward"]) == ("trusted", 2)


# -- task mode ---------------------------------------------------------------------------------


def _task(tmp_path: Path, *, signed: bool = True, **fields: Any) -> Path:
    corpus = synthetic(tmp_path / "corpus", synthetic_roms())
    return synthetic_task(tmp_path, corpus, signed=signed, **fields)


def _run(task: Path) -> dict[str, Any]:
    result = _invoke("--json", "task", "run-tests", "--task", str(task))
    assert result.exit_code == 0, result.output
    report: dict[str, Any] = json.loads(result.output)
    return report


def test_run_tests_writes_last_tsv_and_keeps_the_one_before_as_prev_tsv(tmp_path: Path) -> None:
    task = _task(tmp_path)
    first = _run(task)
    assert (first["passed"], first["reward"], first["trusted"]) == (2, 2, True)
    assert first["results"] == str(task / "last.tsv")
    assert not (task / "prev.tsv").exists()
    (task / "last.tsv").write_text("marker\n")  # stands for the first build's results
    _run(task)
    assert (task / "prev.tsv").read_text() == "marker\n"
    rows = (task / "last.tsv").read_text().splitlines()
    assert rows[0] == "case\tpassed\treason"
    assert sorted(r.split("\t")[:2] for r in rows[1:]) == [["one", "1"], ["two", "1"]]


def test_an_untrusted_task_corpus_earns_no_reward(tmp_path: Path) -> None:
    task = _task(tmp_path, signed=False)
    report = _run(task)
    assert (report["passed"], report["reward"], report["cumulative"]) == (2, 0, 0)
    assert report["trusted"] is False
    assert task_progress(task)[:3] == (2, 2, 0)


@pytest.mark.parametrize("mode", ["aggregate", "hidden"])
def test_aggregate_or_hidden_feedback_is_refused_with_the_reason(tmp_path: Path, mode: str) -> None:
    task = _task(tmp_path, feedback=mode)
    with pytest.raises(FormatError, match="cannot hide what the verifier sees"):
        _run(task)


def test_disabled_feedback_builds_only_and_reports_no_progress(tmp_path: Path) -> None:
    task = _task(tmp_path, feedback="disabled", build=["/bin/sh", "-c", "true"])
    report = _run(task)
    assert (report["status"], report["passed"], report["reward"]) == ("built", 0, 0)
    assert report["failures"] == []
    assert report["results"] is None
    assert not (task / "last.tsv").exists()
    assert not (task / ".playproof" / "reward.json").exists()
    with pytest.raises(FormatError, match="feedback is disabled"):
        task_progress(task)
    broken = _task(tmp_path / "broken", feedback="disabled", build=["/bin/sh", "-c", "exit 3"])
    assert _run(broken)["status"] == "build-failed"


def test_full_feedback_is_the_default(tmp_path: Path) -> None:
    task = _task(tmp_path, feedback="full")
    assert _run(task)["status"] == "graded"
