"""Batch verification: ``playproof verify`` over many records or a folder, with a summary."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from playproof._api import run, verify_signed
from playproof.errors import FormatError
from playproof.exec import record_files, resolve_target, verify_many
from playproof.sign import SigningKey, VerifyingKey, sign_record

EXE = [sys.executable, "-c", "from playproof.cli import main; main()"]
TARGET = resolve_target("native/2048")
MOVES = ("up", "left", "down", "right")


def _agent(observation: Any, history: Any, context: Any) -> str:
    return MOVES[len(history) % len(MOVES)]


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Three records signed by the trusted key, one by a stranger, and a side file."""
    runs = tmp_path_factory.mktemp("runs")
    key, stranger = SigningKey.generate(), SigningKey.generate()
    key.verifying_key.save(runs.parent / f"{runs.name}.pub.pem")
    for seed in range(4):
        record = run(TARGET, _agent, seed=seed, max_turns=20 + seed)
        envelope = sign_record(record, stranger if seed == 3 else key)
        (runs / f"run-{seed}.json").write_bytes(envelope.to_bytes())
    (runs / "run-0.verification.json").write_text("{}")
    (runs / "notes.txt").write_text("not a record")
    return runs


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*EXE, *args], cwd=cwd, capture_output=True, text=True, timeout=300, check=False
    )


def test_a_folder_gives_its_records_sorted_and_skips_side_files(
    folder: Path, tmp_path: Path
) -> None:
    names = [p.name for p in record_files([folder])]
    assert names == ["run-0.json", "run-1.json", "run-2.json", "run-3.json"]
    with pytest.raises(FormatError, match="no record files"):
        record_files([tmp_path])


def test_the_batch_on_the_pool_equals_one_verification_per_file(folder: Path) -> None:
    trusted = VerifyingKey.load(folder.parent / f"{folder.name}.pub.pem")
    seen: list[tuple[int, int]] = []
    verdicts = verify_many(
        [folder], [trusted], executor="local", jobs=2, progress=lambda d, t: seen.append((d, t))
    )
    one_by_one = [verify_signed(p.read_bytes(), [trusted]) for p in record_files([folder])]
    assert [v.report for v in verdicts] == one_by_one
    assert [v.report.clean for v in verdicts] == [True, True, True, False]
    assert seen[-1] == (4, 4)
    serial = verify_many([folder], [trusted], executor="serial")
    assert [v.report.model_dump_json() for v in serial] == [
        v.report.model_dump_json() for v in verdicts
    ]


def test_an_unreadable_file_is_one_rejected_verdict_and_the_others_go_on(
    folder: Path, tmp_path: Path
) -> None:
    trusted = VerifyingKey.load(folder.parent / f"{folder.name}.pub.pem")
    missing = tmp_path / "gone.json"
    verdicts = verify_many([missing, folder / "run-0.json"], [trusted], executor="serial")
    assert [v.path for v in verdicts] == [missing, folder / "run-0.json"]
    assert not verdicts[0].report.clean
    assert verdicts[0].report.checks[0].id == "record-well-formed"
    assert verdicts[1].report.clean


def test_verify_over_a_folder_prints_a_summary_and_exits_1_if_any_is_rejected(
    folder: Path,
) -> None:
    key = f"{folder.name}.pub.pem"
    done = cli("verify", folder.name, "--key", key, "-j", "2", "--json", cwd=folder.parent)
    assert done.returncode == 1, done.stderr
    summary = json.loads(done.stdout)
    assert (summary["total"], summary["clean"], summary["rejected"]) == (4, 3, 1)
    assert summary["retried"] == 0
    assert summary["records"][3]["reasons"][0].startswith("signature-valid")
    text = cli("verify", f"{folder.name}/run-0.json", f"{folder.name}/run-1.json", "--key", key,
               cwd=folder.parent)  # fmt: skip
    assert text.returncode == 0, text.stderr
    assert "2 of 2 records clean" in " ".join(text.stdout.split())


def test_one_record_is_verified_as_before_and_batch_options_need_a_batch(folder: Path) -> None:
    key = f"{folder.name}.pub.pem"
    one = cli("verify", f"{folder.name}/run-0.json", "--key", key, "--json", cwd=folder.parent)
    assert one.returncode == 0, one.stderr
    assert json.loads(one.stdout)["verdict"] == "clean"
    pooled = cli("verify", f"{folder.name}/run-0.json", "--executor", "serial", cwd=folder.parent)
    assert pooled.returncode == 3
    assert "apply to a batch" in pooled.stderr
    pinned = cli("verify", folder.name, "--target", "native/2048", cwd=folder.parent)
    assert pinned.returncode == 3
    assert "verify it alone" in pinned.stderr


def test_a_pool_process_that_dies_costs_no_verdict(
    folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import dying_verify

    from playproof.exec import _batch

    trusted = VerifyingKey.load(folder.parent / f"{folder.name}.pub.pem")
    monkeypatch.setattr(_batch, "_verify_bytes", dying_verify.verify_or_die)
    verdicts = verify_many([folder], [trusted], executor="local", jobs=2)
    one_by_one = [verify_signed(p.read_bytes(), [trusted]) for p in record_files([folder])]
    assert [v.report for v in verdicts] == one_by_one  # the doomed record's game ran in a child


def test_a_record_that_kills_every_process_is_a_typed_error(
    folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import dying_verify

    from playproof.errors import RunError
    from playproof.exec import _batch

    trusted = VerifyingKey.load(folder.parent / f"{folder.name}.pub.pem")
    monkeypatch.setattr(_batch, "_verify_bytes", dying_verify.always_die)
    with pytest.raises(RunError, match="a pool process died again"):
        verify_many([folder], [trusted], executor="local", jobs=2)


def test_a_task_that_raises_rejects_its_record_alone(
    folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import dying_verify

    from playproof.exec import _batch

    trusted = VerifyingKey.load(folder.parent / f"{folder.name}.pub.pem")
    monkeypatch.setattr(_batch, "_verify_bytes", dying_verify.raise_for_doomed)
    verdicts = verify_many([folder], [trusted], executor="local", jobs=2)
    doomed = verdicts[1].report  # run-1.json: seed 1
    assert not doomed.clean
    failed = [c for c in doomed.checks if not c.passed]
    assert [c.id for c in failed] == ["claims-reproduced"]
    assert "MemoryError: no room to replay" in failed[0].reason
    assert [v.report.clean for v in verdicts] == [True, False, True, False]


def test_a_record_whose_verification_hangs_is_rejected_alone_in_time(
    folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import threading

    import dying_verify

    from playproof.exec import _batch

    trusted = VerifyingKey.load(folder.parent / f"{folder.name}.pub.pem")
    monkeypatch.setattr(_batch, "_verify_bytes", dying_verify.hang_for_doomed)
    monkeypatch.setattr(_batch, "BATCH_TIMEOUT_S", 3.0)
    answer: list[Any] = []
    batch = threading.Thread(
        target=lambda: answer.append(verify_many([folder], [trusted], executor="local", jobs=2)),
        daemon=True,
    )
    batch.start()
    batch.join(60)
    assert not batch.is_alive(), "the batch hung past its timeout"
    (verdicts,) = answer
    doomed = verdicts[1].report  # run-1.json: seed 1
    failed = [c for c in doomed.checks if not c.passed]
    assert [c.id for c in failed] == ["claims-reproduced"]
    assert "did not finish within 3 s" in failed[0].reason
    assert [v.report.clean for v in verdicts] == [True, False, True, False]


def test_an_interrupt_while_a_verification_hangs_reaches_the_caller(
    folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before, the pool was then closed by waiting for every task, the hung one too."""
    import threading

    import dying_verify

    from playproof.exec import _batch

    trusted = VerifyingKey.load(folder.parent / f"{folder.name}.pub.pem")
    monkeypatch.setattr(_batch, "_verify_bytes", dying_verify.hang_for_doomed)

    def interrupt(done: int, total: int) -> None:
        raise KeyboardInterrupt  # as Ctrl-C would, once a verdict is in

    answer: list[BaseException] = []

    def batch() -> None:
        try:
            verify_many([folder], [trusted], executor="local", jobs=2, progress=interrupt)
        except BaseException as exc:
            answer.append(exc)

    thread = threading.Thread(target=batch, daemon=True)
    thread.start()
    thread.join(90)
    assert not thread.is_alive(), "the batch waited for the hung verification"
    assert [type(e) for e in answer] == [KeyboardInterrupt]
