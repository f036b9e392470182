"""Hostile edits to a signed corpus and to the signed reward state.

A corpus changed after its controller signed it (manifest, answers or a case
file) grades only untrusted; a signature file mangled in any way does too and
never raises. An edited reward state is refused: before it was signed, adding
43 to the cumulative reward by hand made ``task progress`` print "0 of 43 pass;
cumulative reward +43".
"""

from __future__ import annotations

import base64
import json
import sys
from pathlib import Path
from typing import Any

import pytest
from controllers import CONTROLLER, SYNTHETIC_CANDIDATE, sign_test_corpus, synthetic_corpus
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

import playproof.cli._corpus  # noqa: F401  (registers the commands)
from playproof.cli._app import app
from playproof.corpus import Corpus, CorpusAnswers, load_answers, load_corpus, load_manifest
from playproof.corpus._task import task_progress
from playproof.corpus._trust import (
    CorpusTrust,
    check_corpus_signature,
    read_signature,
    sign_corpus,
    signature_path,
)
from playproof.errors import FormatError
from playproof.sign import SigningKey


def _signed(folder: Path) -> tuple[Corpus, CorpusAnswers, bytes]:
    manifest_path = synthetic_corpus(folder)
    manifest = load_manifest(manifest_path)
    answers = load_answers(folder / "answers.json", manifest)
    sign_test_corpus(manifest_path, answers, folder / "roms")
    signature = read_signature(signature_path(manifest_path))
    assert signature is not None
    return load_corpus(manifest, folder / "roms"), answers, signature


def _check(corpus: Corpus, answers: CorpusAnswers, signature: bytes | None) -> CorpusTrust:
    return check_corpus_signature(corpus, answers, signature, [CONTROLLER.verifying_key])


@pytest.fixture(scope="module")
def signed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Corpus, CorpusAnswers, bytes]:
    return _signed(tmp_path_factory.mktemp("signed"))


def test_the_untouched_corpus_is_trusted(signed: tuple[Corpus, CorpusAnswers, bytes]) -> None:
    trust = _check(*signed)
    assert trust.trusted, trust.reason
    assert trust.key_id == CONTROLLER.key_id


def test_a_tampered_manifest_fails_the_corpus_signature(
    signed: tuple[Corpus, CorpusAnswers, bytes],
) -> None:
    corpus, answers, signature = signed
    case = corpus.manifest.cases[0].model_copy(update={"budget_frames": 100_000})
    manifest = corpus.manifest.model_copy(update={"cases": (case, *corpus.manifest.cases[1:])})
    trust = _check(Corpus(manifest=manifest, roms=corpus.roms), answers, signature)
    assert trust.trust == "untrusted"
    assert "manifest" in trust.reason


def test_tampered_answers_fail_the_corpus_signature(
    signed: tuple[Corpus, CorpusAnswers, bytes],
) -> None:
    corpus, answers, signature = signed
    edited = answers.model_copy(update={"reference": "someone else"})
    trust = _check(corpus, edited, signature)
    assert (trust.trust, "answers" in trust.reason) == ("untrusted", True)


def test_a_tampered_case_file_fails_the_corpus_signature(
    signed: tuple[Corpus, CorpusAnswers, bytes],
) -> None:
    corpus, answers, signature = signed
    roms = {**corpus.roms, "one": corpus.roms["one"] + b"\x00"}
    trust = _check(Corpus(manifest=corpus.manifest, roms=roms), answers, signature)
    assert (trust.trust, "case files" in trust.reason) == ("untrusted", True)


def test_a_case_file_swapped_with_its_pin_grades_untrusted(tmp_path: Path) -> None:
    """Changing a ROM and its manifest pin together still breaks the signature."""
    folder = tmp_path / "corpus"
    _signed(folder)
    public = folder / "controller.pub.pem"
    rom = folder / "roms" / "one.gb"
    rom.write_bytes(b"one" + bytes(301))
    data = json.loads((folder / "manifest.json").read_text())
    from playproof.core.canonical import sha256_hex

    data["cases"][0]["sha256"] = sha256_hex(rom.read_bytes())
    (folder / "manifest.json").write_text(json.dumps(data))
    manifest = load_manifest(folder / "manifest.json")
    answers = json.loads((folder / "answers.json").read_text())
    answers["manifest_digest"] = manifest.digest
    (folder / "answers.json").write_text(json.dumps(answers))
    result = CliRunner().invoke(
        app,
        [
            "--json",
            "grade",
            "--candidate",
            f"{sys.executable} {SYNTHETIC_CANDIDATE}",
            "--runtime",
            "python",
            "--corpus",
            str(folder / "manifest.json"),
            "--answers",
            str(folder / "answers.json"),
            "--roms",
            str(folder / "roms"),
            "--case-seconds",
            "20",
            "--out",
            str(tmp_path / "g.json"),
            "--key-dir",
            str(tmp_path / "k"),
            "--controller-key",
            str(public),
        ],
        catch_exceptions=False,
    )
    assert result.exit_code == 0, result.output
    summary = json.loads(result.output)
    assert (summary["passed"], summary["trust"], summary["reward"]) == (2, "untrusted", 0)
    assert "manifest" in summary["trust_reason"]


def test_a_signature_by_another_controller_is_untrusted(
    signed: tuple[Corpus, CorpusAnswers, bytes],
) -> None:
    corpus, answers, _ = signed
    forged = sign_corpus(corpus, answers, SigningKey.generate()).to_json()
    trust = _check(corpus, answers, json.dumps(forged).encode())
    assert trust.trust == "untrusted"
    assert "signature-valid" in trust.reason


def test_no_signature_is_untrusted(signed: tuple[Corpus, CorpusAnswers, bytes]) -> None:
    corpus, answers, _ = signed
    assert "no signature" in _check(corpus, answers, None).reason


@settings(max_examples=200, deadline=None)
@given(data=st.data())
def test_a_mangled_signature_is_untrusted_and_never_raises(
    signed: tuple[Corpus, CorpusAnswers, bytes], data: st.DataObject
) -> None:
    corpus, answers, signature = signed
    position = data.draw(st.integers(0, len(signature) - 1))
    byte = data.draw(st.integers(0, 255).filter(lambda b: b != signature[position]))
    mangled = signature[:position] + bytes([byte]) + signature[position + 1 :]
    trust = _check(corpus, answers, mangled)
    # A flip inside JSON whitespace or a base64 character the decoder ignores
    # could leave the signed bytes as they were; anything else is untrusted.
    if trust.trusted:
        assert json.loads(mangled) == json.loads(signature) or _same_payload(mangled, signature)


def _same_payload(a: bytes, b: bytes) -> bool:
    try:
        first, second = json.loads(a), json.loads(b)
        return bool(
            base64.b64decode(first["payload"]) == base64.b64decode(second["payload"])
            and base64.b64decode(first["signatures"][0]["sig"])
            == base64.b64decode(second["signatures"][0]["sig"])
        )
    except (ValueError, KeyError, IndexError, TypeError):
        return False


# -- the reward state ------------------------------------------------------------------------


def _task(tmp_path: Path) -> Path:
    manifest = synthetic_corpus(tmp_path / "corpus")
    answers = load_answers(manifest.with_name("answers.json"), load_manifest(manifest))
    public = sign_test_corpus(manifest, answers, manifest.with_name("roms"))
    task = tmp_path / "task"
    (task / "workspace").mkdir(parents=True)
    (task / "workspace" / "candidate.py").write_text(
        "import sys\nfor line in sys.stdin.buffer:\n    sys.exit(0)\n"
    )
    spec = {
        "manifest": str(manifest),
        "answers": str(manifest.with_name("answers.json")),
        "roms": str(manifest.with_name("roms")),
        "controller_key": str(public),
        "candidate": [sys.executable, "candidate.py"],
        "runtime": "python",
        "case_seconds": 20,
    }
    (task / "task.json").write_text(json.dumps(spec))
    return task


def _edit_state(path: Path, change: dict[str, Any]) -> None:
    """Edit the reward state as an agent would: in place, whatever its layout."""
    document = json.loads(path.read_text())
    if "payload" in document:  # a signed state: edit the statement inside the envelope
        statement = json.loads(base64.b64decode(document["payload"]))
        statement["predicate"].update(change)
        raw = json.dumps(statement).encode()
        document["payload"] = base64.b64encode(raw).decode()
    else:
        document.update(change)
    path.write_text(json.dumps(document))


def _run(task: Path) -> dict[str, Any]:
    result = CliRunner().invoke(
        app, ["--json", "task", "run-tests", "--task", str(task)], catch_exceptions=False
    )
    assert result.exit_code == 0, result.output
    report: dict[str, Any] = json.loads(result.output)
    return report


def test_an_edited_reward_state_is_refused(tmp_path: Path) -> None:
    task = _task(tmp_path)
    assert _run(task)["passed"] == 0
    assert task_progress(task)[:3] == (0, 2, 0)
    _edit_state(task / ".playproof" / "reward.json", {"cumulative": 43})
    with pytest.raises(FormatError, match="is refused: it is not as the grader signed it"):
        task_progress(task)
    with pytest.raises(FormatError, match="is refused"):
        _run(task)
    shown = CliRunner().invoke(app, ["task", "progress", "--task", str(task)])
    assert shown.exit_code != 0
    assert "cumulative reward +43" not in shown.output


def test_a_reward_state_signed_by_another_key_is_refused(tmp_path: Path) -> None:
    task = _task(tmp_path)
    _run(task)
    SigningKey.generate().save(task / ".playproof" / "grader.pem", overwrite=True)
    with pytest.raises(FormatError, match="is refused"):
        task_progress(task)


def test_a_deleted_reward_state_is_refused(tmp_path: Path) -> None:
    task = _task(tmp_path)
    _run(task)
    (task / ".playproof" / "reward.json").unlink()
    with pytest.raises(FormatError, match="missing though the task's grader key exists"):
        task_progress(task)
