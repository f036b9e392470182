"""Hostile matrix folders and specs: secrets, torn, renamed, oversized and stale files."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from playproof.cli._matrix import build_agent
from playproof.errors import NotSupportedError
from playproof.matrix import (
    SPEC_FILE,
    AgentProfile,
    CellAgent,
    StoredVerification,
    collect,
    parse_spec,
    record_path,
    run_matrix,
)
from playproof.sign import MAX_ENVELOPE_BYTES, SigningKey, record_digest
from playproof.targets import Target

EXE = [sys.executable, "-c", "from playproof.cli import main; main()"]

SPEC = """
targets = ["native/2048"]
seeds = [0, 1]
max_turns = 8

[[agents]]
name = "robin"
agent = "baseline:round-robin"
"""


@pytest.fixture
def played(tmp_path: Path) -> tuple[Path, SigningKey]:
    """Two cells of 2048 played serially into ``tmp_path/runs``."""
    key = SigningKey.generate()
    outcome = run_matrix(parse_spec(SPEC), tmp_path / "runs", key, build_agent, executor="serial")
    assert outcome.played == 2
    return tmp_path / "runs", key


def _cell(name: str) -> str:
    return f"robin__native.2048__s{name}__r0.json"


def test_a_spec_with_a_secret_value_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    spec = SPEC.replace('agent = "baseline:round-robin"', 'agent = "openai:m"\napi_key = "x"')
    (tmp_path / "spec.toml").write_text(spec)
    result = subprocess.run(
        [*EXE, "matrix", "run", "spec.toml", "--out", "runs", "--key-dir", "keys"],
        cwd=tmp_path, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert result.returncode == 3
    assert "looks like a secret" in result.stderr or "named like a secret" in result.stderr
    assert "api_key_env" in result.stderr
    assert not (tmp_path / "runs").exists()
    assert not (tmp_path / "keys").exists()


def test_a_torn_record_is_played_again(played: tuple[Path, SigningKey]) -> None:
    runs, key = played
    torn = runs / _cell("0")
    torn.write_bytes(torn.read_bytes()[:100])
    outcome = run_matrix(parse_spec(SPEC), runs, key, build_agent, executor="serial")
    assert (outcome.played, outcome.skipped) == (1, 1)
    assert json.loads(torn.read_bytes())["payloadType"]


def test_a_record_signed_by_another_key_is_played_again(played: tuple[Path, SigningKey]) -> None:
    runs, _ = played
    outcome = run_matrix(
        parse_spec(SPEC), runs, SigningKey.generate(), build_agent, executor="serial"
    )
    assert outcome.played == 2


def test_a_record_made_under_another_configuration_is_played_again(
    played: tuple[Path, SigningKey],
) -> None:
    runs, key = played
    changed = parse_spec(SPEC.replace("max_turns = 8", "max_turns = 9"))
    assert run_matrix(changed, runs, key, build_agent, executor="serial").played == 2


def test_a_renamed_record_is_rejected_and_its_cell_replayed(
    played: tuple[Path, SigningKey],
) -> None:
    runs, key = played
    (runs / _cell("1")).write_bytes((runs / _cell("0")).read_bytes())
    collected = collect(runs, [key.verifying_key], executor="serial")
    assert [r.file for r in collected.rejected] == [_cell("1")]
    assert "not this file's cell" in collected.rejected[0].reasons[0]
    assert run_matrix(parse_spec(SPEC), runs, key, build_agent, executor="serial").played == 1


def test_a_stored_verification_for_another_digest_is_not_trusted(
    played: tuple[Path, SigningKey],
) -> None:
    runs, key = played
    first = collect(runs, [key.verifying_key], executor="serial")
    assert [c.source for c in first.cells] == ["replay", "replay"]
    again = collect(runs, [key.verifying_key], executor="serial")
    assert [c.source for c in again.cells] == ["stored", "stored"]
    # Swap in a forged record signed by the same key: the stored clean
    # verification names the old digest and must not vouch for it.
    cell = runs / _cell("0")
    from playproof.core.record import parse_run_record
    from playproof.sign import parse_envelope, sign_record

    record = parse_run_record(
        json.loads(parse_envelope(cell.read_bytes()).payload_bytes())["predicate"]
    )
    forged = record.model_validate(
        {**record.to_json(), "claimed": [*record.to_json()["claimed"], {"id": "x", "turn": 1}]}
    )
    cell.write_bytes(sign_record(forged, key).to_bytes())
    sidecar = runs / _cell("0").replace(".json", ".verification.json")
    stored = StoredVerification.model_validate_json(sidecar.read_bytes())
    assert stored.report.clean
    assert stored.record_digest == record_digest(record)
    after = collect(runs, [key.verifying_key], executor="serial")
    assert [r.file for r in after.rejected] == [_cell("0")]
    assert any(r.startswith("claims-reproduced") for r in after.rejected[0].reasons)


def test_oversized_and_special_files_are_rejected_without_hanging(
    played: tuple[Path, SigningKey],
) -> None:
    runs, key = played
    big = runs / "huge.json"
    with big.open("wb") as handle:
        handle.truncate(MAX_ENVELOPE_BYTES + 1)
    os.mkfifo(runs / "pipe.json")
    collected = collect(runs, [key.verifying_key], executor="serial")
    reasons = {r.file: r.reasons[0] for r in collected.rejected}
    assert "over the" in reasons["huge.json"]
    assert "FIFO" in reasons["pipe.json"]
    assert len(collected.cells) == 2


def test_a_report_lists_cells_the_spec_names_but_the_folder_lacks(
    played: tuple[Path, SigningKey],
) -> None:
    runs, key = played
    record_path(runs, parse_spec(SPEC).cells()[1]).unlink()
    collected = collect(runs, [key.verifying_key], executor="serial")
    assert collected.missing == [_cell("1").removesuffix(".json")]
    assert (runs / SPEC_FILE).is_file()


def test_the_ray_executor_without_its_extra_names_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)
    with pytest.raises(NotSupportedError, match=r"pip install 'playproof\[ray\]'"):
        run_matrix(parse_spec(SPEC), tmp_path / "runs", SigningKey.generate(), build_agent,
                   executor="ray")  # fmt: skip
    assert not (tmp_path / "runs").exists()


def test_a_stale_temporary_file_of_a_dead_writer_is_removed(
    played: tuple[Path, SigningKey],
) -> None:
    runs, key = played
    stale = runs / f".{_cell('0')}.999999999.tmp"
    stale.write_bytes(b"{")
    run_matrix(parse_spec(SPEC), runs, key, build_agent, executor="serial")
    assert not stale.exists()


def test_the_report_without_its_extra_names_it(played: tuple[Path, SigningKey]) -> None:
    runs, key = played
    key.verifying_key.save(runs.parent / "k.pub.pem")
    hide = "import sys; sys.modules['scipy'] = None; sys.modules['scipy.stats'] = None; "
    result = subprocess.run(
        [sys.executable, "-c", hide + "from playproof.cli import main; main()",
         "matrix", "report", "runs", "--key", "k.pub.pem"],
        cwd=runs.parent, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert result.returncode == 3
    assert "pip install 'playproof[report]'" in result.stderr
    assert "scipy" in result.stderr
    assert not (runs / "report").exists()


def test_the_ray_executor_on_the_command_line_creates_nothing(tmp_path: Path) -> None:
    (tmp_path / "spec.toml").write_text(SPEC)
    hide = "import sys; sys.modules['ray'] = None; "
    result = subprocess.run(
        [sys.executable, "-c", hide + "from playproof.cli import main; main()",
         "matrix", "run", "spec.toml", "--out", "runs", "--key-dir", "keys",
         "--executor", "ray"],
        cwd=tmp_path, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert result.returncode == 3
    assert "pip install 'playproof[ray]'" in result.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["spec.toml"]


def test_a_report_without_a_trusted_key_says_how_to_give_one(
    played: tuple[Path, SigningKey],
) -> None:
    runs, _ = played
    result = subprocess.run(
        [*EXE, "matrix", "report", "runs", "--key-dir", "nokeys"],
        cwd=runs.parent, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert result.returncode == 3
    assert "--key FILE.pub.pem" in result.stderr
    assert not (runs / "report").exists()


def test_a_stored_verification_someone_else_wrote_or_edited_is_replayed(
    played: tuple[Path, SigningKey], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Nothing signs a stored verification: only one this user's replays kept stands."""
    runs, key = played
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "mine"))
    honest = collect(runs, [key.verifying_key], executor="serial")
    assert [c.source for c in honest.cells] == ["replay", "replay"]
    earned = {c.file: list(c.report.verified) for c in honest.cells}
    sidecar = runs / _cell("0").replace(".json", ".verification.json")
    forged = json.loads(sidecar.read_text())
    forged["report"]["verified"] = [*forged["report"]["verified"], "made-up-1", "made-up-2"]
    sidecar.write_text(json.dumps(forged))  # the record itself is untouched
    again = collect(runs, [key.verifying_key], executor="serial")
    assert [c.source for c in again.cells] == ["replay", "stored"]
    assert {c.file: list(c.report.verified) for c in again.cells} == earned

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "theirs"))  # another user's key
    elsewhere = collect(runs, [key.verifying_key], executor="serial")
    assert [c.source for c in elsewhere.cells] == ["replay", "replay"]

    blocked = tmp_path / "blocked"
    blocked.write_text("a file, so no cache folder can be made under it")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocked))
    for sidecar in runs.glob("*.verification.json"):
        sidecar.unlink()
    keyless = collect(runs, [key.verifying_key], executor="serial")
    assert [c.source for c in keyless.cells] == ["replay", "replay"]
    assert not list(runs.glob("*.verification.json"))  # nothing kept without a key


def test_a_folder_where_a_record_goes_fails_that_cell_and_keeps_the_others(
    tmp_path: Path,
) -> None:
    spec = parse_spec(SPEC)
    runs, key = tmp_path / "runs", SigningKey.generate()
    blocked, free = spec.cells()
    record_path(runs, blocked).mkdir(parents=True)
    outcome = run_matrix(spec, runs, key, build_agent, executor="serial")
    assert (outcome.played, outcome.skipped) == (1, 0)
    assert [cell for cell, _ in outcome.failed] == [blocked.id]
    assert "cannot write its record" in outcome.failed[0][1]
    assert record_path(runs, free).is_file()
    assert record_path(runs, blocked).is_dir()
    assert not [p for p in runs.iterdir() if p.name.endswith(".tmp")]


def test_a_folder_where_a_stored_verification_goes_does_not_stop_the_report(
    played: tuple[Path, SigningKey],
) -> None:
    runs, key = played
    blocked = runs / _cell("0").replace(".json", ".verification.json")
    blocked.mkdir()
    collected = collect(runs, [key.verifying_key], executor="serial")
    assert [c.source for c in collected.cells] == ["replay", "replay"]
    assert not collected.rejected
    assert blocked.is_dir()
    assert not [p for p in runs.iterdir() if p.name.endswith(".tmp")]


def test_records_of_another_spec_are_rejected_from_the_report(
    played: tuple[Path, SigningKey],
) -> None:
    # A rerun with a changed spec writes matrix.spec.json first; killed before it
    # replays anything, the folder holds records of the old configuration.
    runs, key = played
    changed = parse_spec(SPEC.replace("max_turns = 8", "max_turns = 9").replace("0, 1", "0"))
    (runs / SPEC_FILE).write_text(changed.model_dump_json(by_alias=True, indent=2))
    collected = collect(runs, [key.verifying_key], executor="serial")
    assert collected.cells == []
    reasons = {r.file: r.reasons for r in collected.rejected}
    assert "another configuration" in reasons[_cell("0")][0]
    assert "not a cell of" in reasons[_cell("1")][0]
    assert collected.missing == []
    # The records themselves are kept: the old spec reports them again.
    (runs / SPEC_FILE).write_text(parse_spec(SPEC).model_dump_json(by_alias=True, indent=2))
    assert len(collect(runs, [key.verifying_key], executor="serial").cells) == 2


def test_a_planted_link_at_a_temporary_name_is_not_written_through(tmp_path: Path) -> None:
    # Temporary names are predictable (the writer's process id): a folder handed
    # over with links at those names must not make a write land elsewhere.
    spec = parse_spec(SPEC)
    runs, victim = tmp_path / "runs", tmp_path / "victim.txt"
    runs.mkdir()
    victim.write_text("keep me")
    for cell in spec.cells():
        (runs / f".{record_path(runs, cell).name}.{os.getpid()}.tmp").symlink_to(victim)
    outcome = run_matrix(spec, runs, SigningKey.generate(), build_agent, executor="serial")
    assert outcome.played == 2
    assert victim.read_text() == "keep me"
    for cell in spec.cells():
        assert not record_path(runs, cell).is_symlink()
        assert json.loads(record_path(runs, cell).read_bytes())["payloadType"]


def test_a_report_folder_the_records_folder_links_elsewhere_is_not_written_through(
    played: tuple[Path, SigningKey], tmp_path: Path
) -> None:
    runs, key = played
    key.verifying_key.save(tmp_path / "k.pub.pem")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (runs / "report").symlink_to(elsewhere)
    command = [*EXE, "matrix", "report", "runs", "--key", "k.pub.pem", "--executor", "serial"]
    linked = subprocess.run(
        command, cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False
    )
    assert linked.returncode == 3
    assert "is a link" in linked.stderr
    assert "--out" in linked.stderr
    assert list(elsewhere.iterdir()) == []
    (runs / "report").unlink()
    (runs / "report").write_text("a file where the report folder goes")
    blocked = subprocess.run(
        command, cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False
    )
    assert blocked.returncode == 3
    assert "cannot write the report" in blocked.stderr
    assert "internal error" not in blocked.stderr


def test_a_temporary_name_with_an_impossible_process_id_does_not_stop_a_run(
    played: tuple[Path, SigningKey],
) -> None:
    runs, key = played
    stale = runs / f".{_cell('0')}.{'9' * 30}.tmp"
    stale.write_bytes(b"{")
    outcome = run_matrix(parse_spec(SPEC), runs, key, build_agent, executor="serial")
    assert outcome.skipped == 2
    assert not stale.exists()  # no process can have that id: its writer is gone


def test_a_matrix_folder_that_cannot_be_used_is_a_run_error_before_any_cell(
    tmp_path: Path,
) -> None:
    from playproof.errors import RunError

    spec, key = parse_spec(SPEC), SigningKey.generate()
    a_file = tmp_path / "a-file"
    a_file.write_text("not a folder")
    with pytest.raises(RunError, match=r"cannot use .* as the matrix folder"):
        run_matrix(spec, a_file, key, build_agent, executor="serial")
    runs = tmp_path / "runs"
    (runs / SPEC_FILE).mkdir(parents=True)
    with pytest.raises(RunError, match=rf"cannot write .*{SPEC_FILE}"):
        run_matrix(spec, runs, key, build_agent, executor="serial")
    assert sorted(p.name for p in runs.iterdir() if not p.name.startswith(".")) == [SPEC_FILE]


def test_a_second_run_on_a_folder_in_use_is_refused(tmp_path: Path) -> None:
    """Two runs on one folder would play (and pay for) the same cells twice."""
    import threading
    from concurrent.futures import ThreadPoolExecutor

    from playproof.errors import RunError

    spec, key, runs = parse_spec(SPEC), SigningKey.generate(), tmp_path / "runs"
    started, go = threading.Event(), threading.Event()

    def held(profile: AgentProfile, target: Target, agent_seed: int) -> CellAgent:
        started.set()
        go.wait()
        return build_agent(profile, target, agent_seed)

    with ThreadPoolExecutor(1) as threads:
        first = threads.submit(run_matrix, spec, runs, key, held, executor="serial")
        started.wait()
        try:
            with pytest.raises(RunError, match="another matrix run"):
                run_matrix(spec, runs, key, build_agent, executor="serial")
        finally:
            go.set()
        assert first.result().played == 2
    # Once the first run is over the folder is free again.
    assert run_matrix(spec, runs, key, build_agent, executor="serial").skipped == 2


@pytest.mark.parametrize("damage", ["torn", "folder"])
def test_an_unreadable_kept_spec_is_listed_not_ignored(
    played: tuple[Path, SigningKey], damage: str
) -> None:
    runs, key = played
    kept = runs / SPEC_FILE
    if damage == "torn":
        kept.write_bytes(kept.read_bytes()[:40])
    else:
        kept.unlink()
        kept.mkdir()
    collected = collect(runs, [key.verifying_key], executor="serial")
    assert len(collected.cells) == 2
    assert collected.spec is None
    assert [r.file for r in collected.rejected] == [SPEC_FILE]
    assert "cannot be checked" in collected.rejected[0].reasons[0]
