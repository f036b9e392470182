"""Hostile input to corpus grading: floods, answer theft, oversized manifests, bad checksum
files, disk-filling builds and symlinked candidates."""

from __future__ import annotations

import json
import os
import resource
import shutil
import stat
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from controllers import SYNTHETIC_CANDIDATE, Synthetic, synthetic, synthetic_task
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

import playproof.cli._corpus  # registers the commands
import playproof.corpus
from playproof.cli._app import app
from playproof.core.canonical import sha256_hex
from playproof.corpus import (
    CorpusCase,
    CorpusManifest,
    JailLimits,
    _manifest,
    _task,
    bubblewrap_usable,
    grade_candidate,
    load_corpus,
    read_sums,
)
from playproof.corpus._grading import command_candidate
from playproof.corpus._hiding import answers_files
from playproof.corpus._jail import (
    JailSpec,
    launch,
    python_paths,
    reserve_lanes,
)
from playproof.corpus._manifest import MAX_CORPUS_BYTES
from playproof.corpus._runtime import RuntimeView
from playproof.corpus._trials import TrialWorker
from playproof.corpus._watch import disk_use
from playproof.corpus._wire import MAX_ROM_BYTES
from playproof.errors import FormatError, RunError

CANDIDATES = Path(__file__).parents[1] / "corpus" / "candidates"
SYNTHETIC = SYNTHETIC_CANDIDATE
DATA = Path(playproof.corpus.__file__).resolve().parent / "data"
"""The installed package's corpus data (answers included), wherever the package lies."""
PACKAGE_PARENT = DATA.parents[2]
"""The folder holding ``playproof/``: site-packages in a wheel install, ``src`` here."""
QUICK = JailLimits(wall_seconds=20.0, cpu_seconds=20)
needs_bwrap = pytest.mark.skipif(not bubblewrap_usable(), reason="bubblewrap cannot run here")
as_root = pytest.mark.skipif(os.geteuid() != 0, reason="jail uids exist only when root")


def _invoke(*args: str) -> Any:
    return CliRunner().invoke(app, list(args), catch_exceptions=False)


def _grade_args(corpus: Synthetic, candidate: str, out: Path) -> list[str]:
    return [
        "--json",
        "grade",
        "--candidate",
        candidate,
        "--runtime",
        "python",
        "--corpus",
        str(corpus.manifest_path),
        "--answers",
        str(corpus.answers_path),
        "--roms",
        str(corpus.roms),
        "--case-seconds",
        "20",
        "--out",
        str(out),
        "--key-dir",
        str(out.parent / "keys"),
    ]


# -- a serial flood fails its own case only -------------------------------------------------


def test_a_serial_flood_fails_its_case_and_the_rest_grade(tmp_path: Path) -> None:
    corpus = synthetic(tmp_path, {"flood": b"FLOOD" + bytes(300), "calm": b"CALM" + bytes(300)})
    spec = command_candidate((sys.executable, str(SYNTHETIC)), runtime="python")
    run = grade_candidate(
        load_corpus(corpus.manifest, corpus.roms), corpus.answers, spec, limits=QUICK
    )
    seen = {o.case_id: o for o in run.observations}
    assert seen["flood"].outcome == "protocol-error"
    assert "64 KiB" in seen["flood"].detail
    assert len(seen["flood"].serial or "") <= 65536
    assert seen["calm"].outcome == "ok"
    assert [r.passed for r in run.grade.results] == [False, True]
    assert "serial output over the 64 KiB limit" in run.grade.results[0].reason
    assert run.record.passed == 1


def test_a_serial_flood_still_writes_a_grade_record_and_a_reward(tmp_path: Path) -> None:
    corpus = synthetic(tmp_path, {"flood": b"FLOOD" + bytes(300), "calm": b"CALM" + bytes(300)})
    out = tmp_path / "grade.json"
    result = _invoke(*_grade_args(corpus, f"{sys.executable} {SYNTHETIC}", out))
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["passed"] == 1
    assert out.exists()
    task = synthetic_task(tmp_path, corpus)
    report = json.loads(_invoke("--json", "task", "run-tests", "--task", str(task)).output)
    assert (report["status"], report["passed"], report["reward"]) == ("graded", 1, 1)
    assert _task.task_progress(task)[2] == 1  # the signed reward state was written


# -- a grader holding many descriptors ----------------------------------------------------

HELD_DESCRIPTORS = 1100
"""More than ``select`` takes (1024): what a grader running many slots, or long, holds."""


@pytest.fixture
def many_descriptors() -> Iterator[None]:
    """This process holds over 1024 open descriptors, so every new one is numbered above."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    needed = HELD_DESCRIPTORS + 500
    if hard != resource.RLIM_INFINITY and hard < needed:
        pytest.skip(f"the descriptor limit ({hard}) is below {needed}")
    if soft != resource.RLIM_INFINITY and soft < needed:
        resource.setrlimit(resource.RLIMIT_NOFILE, (needed, hard))
    held = [os.open(os.devnull, os.O_RDONLY) for _ in range(HELD_DESCRIPTORS)]
    try:
        yield
    finally:
        for handle in held:
            os.close(handle)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


@pytest.mark.parametrize("warm", [True, False], ids=["warm-jail", "fresh-jails"])
def test_a_grader_holding_over_1024_descriptors_grades_as_usual(
    tmp_path: Path, many_descriptors: None, warm: bool
) -> None:
    corpus = synthetic(tmp_path, {name: name.encode() + bytes(300) for name in ("a", "b", "c")})
    spec = command_candidate((sys.executable, str(SYNTHETIC)), runtime="python")
    run = grade_candidate(
        load_corpus(corpus.manifest, corpus.roms),
        corpus.answers,
        spec,
        jobs=1,
        limits=QUICK,
        warm=warm,
    )
    assert [o.outcome for o in run.observations] == ["ok"] * 3
    assert run.grade.passed == 3


def test_a_reference_try_in_a_grader_holding_over_1024_descriptors_answers(
    many_descriptors: None,
) -> None:
    rom = bytearray(0x8000)
    rom[0x100:0x104] = bytes([0x00, 0xC3, 0x50, 0x01])  # NOP; JP 0x150
    rom[0x150:0x157] = bytes([0x06, 0x03, 0x0E, 0x05, 0x40, 0x18, 0xFE])  # B=3 C=5 LD B,B
    rom[0x14D] = (-sum(rom[0x134:0x14D]) - 25) & 0xFF  # the header checksum PyBoy checks
    with TrialWorker() as trials:
        reply = trials.run("mooneye", bytes(rom), 200, 200)
    assert reply is not None
    assert reply[0][:2] == [3, 5]


# -- answers are out of reach of builds and candidates ----------------------------------------


def _jailed_stdout(argv: list[str], spec: JailSpec) -> bytes:
    with reserve_lanes(1) as (lane,):
        jailed = launch(argv, spec, lane)
        try:
            assert jailed.process.stdin is not None
            assert jailed.process.stdout is not None
            jailed.process.stdin.close()
            jailed.process.wait(timeout=30)
            return jailed.process.stdout.read(1 << 20)
        finally:
            jailed.stop()
            jailed.discard()


@needs_bwrap
def test_a_jail_showing_the_installed_package_hides_its_answers(tmp_path: Path) -> None:
    answers = sorted(DATA.glob("*/answers.json"))
    assert answers, "the package ships answers"
    link = tmp_path / "site-packages"
    link.symlink_to(PACKAGE_PARENT)  # the same folder reached through a symlink
    inside = [str(link / path.relative_to(PACKAGE_PARENT)) for path in answers]
    script = 'for p do cat "$p"; done; ls -R "$0"'
    for visible in (PACKAGE_PARENT, link):
        spec = JailSpec(read_only=(visible,), isolation="bubblewrap")
        shown = _jailed_stdout(
            ["/bin/sh", "-c", script, str(DATA), *map(str, answers), *inside], spec
        )
        assert b"manifest_digest" not in shown
        assert b"answers.json" not in shown
    # Named directly (a bound file inside the data folder) it is covered too.
    spec = JailSpec(read_only=(PACKAGE_PARENT, answers[0]), isolation="bubblewrap")
    assert b"manifest_digest" not in _jailed_stdout(["/bin/cat", str(answers[0])], spec)


@needs_bwrap
def test_a_build_that_copies_the_answers_gets_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    corpus = synthetic(tmp_path, {"calm": b"CALM" + bytes(300)})
    # As in a wheel install: the interpreter's folders the build sees hold the package.
    shown = RuntimeView(visible=(*python_paths(), PACKAGE_PARENT), hidden=())
    monkeypatch.setattr(_task, "runtime_view", lambda runtime: shown)
    steal = (
        f"cp -r {DATA} stolen; cat {DATA}/*/answers.json > copied.json; "
        f"cat {corpus.answers_path} > custom.json; exit 0"
    )
    task = synthetic_task(tmp_path, corpus, build=["/bin/sh", "-c", steal])
    report = json.loads(_invoke("--json", "task", "run-tests", "--task", str(task)).output)
    assert report["status"] == "graded"
    workspace = task / "workspace"
    assert not list(workspace.rglob("answers.json"))
    for path in workspace.rglob("*"):
        if path.is_file():
            assert b"manifest_digest" not in path.read_bytes()


@pytest.fixture
def open_folder() -> Iterator[Path]:
    """A folder every user may read (pytest's own temporary folders are closed to others)."""
    folder = Path(tempfile.mkdtemp(prefix="playproof-open-"))
    folder.chmod(0o755)
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@as_root
def test_without_bubblewrap_root_refuses_answers_the_jail_uid_could_read(open_folder: Path) -> None:
    answers = open_folder / "answers.json"
    answers.write_text("{}")
    answers.chmod(0o644)
    assert all(os.stat(p).st_mode & stat.S_IXOTH for p in open_folder.parents)
    spec = JailSpec(secret=(answers,), isolation="rlimits")
    with reserve_lanes(1) as (lane,), pytest.raises(RunError, match=str(answers)):
        launch(["/bin/true"], spec, lane)


def test_every_shipped_answers_file_is_a_secret_of_every_jail() -> None:
    shipped = {str(p) for p in DATA.glob("*/answers.json")}
    assert shipped
    assert shipped <= set(answers_files(()))


# -- a manifest cannot multiply memory ---------------------------------------------------------


def _many_cases(folder: Path, size: int, count: int) -> CorpusManifest:
    data = os.urandom(size)
    (folder / "big.gb").write_bytes(data)
    (folder / "twin.gb").write_bytes(data)  # another file, same content
    cases = tuple(
        CorpusCase(
            id=f"case-{n}",
            file="twin.gb" if n == 0 else "big.gb",
            sha256=sha256_hex(data),
            suite="s",
            budget_frames=1,
        )
        for n in range(count)
    )
    return CorpusManifest(corpus_id="many", version="1", cases=cases, denominator=count)


def test_cases_naming_one_file_share_one_copy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    manifest = _many_cases(tmp_path, 1024 * 1024, 200)
    reads: list[Path] = []
    real = _manifest.read_bounded

    def counted(path: Path, *args: Any, **kwargs: Any) -> bytes:
        reads.append(path)
        return real(path, *args, **kwargs)

    monkeypatch.setattr(_manifest, "read_bounded", counted)
    corpus = load_corpus(manifest, tmp_path)
    assert sorted(p.name for p in reads) == ["big.gb", "twin.gb"]  # each file read once
    assert len({id(data) for data in corpus.roms.values()}) == 1  # one copy in memory


def test_a_manifest_naming_more_than_the_corpus_limit_is_refused(tmp_path: Path) -> None:
    count = MAX_CORPUS_BYTES // MAX_ROM_BYTES + 1
    manifest = _many_cases(tmp_path, MAX_ROM_BYTES, count)
    with pytest.raises(FormatError, match=f"{MAX_CORPUS_BYTES // 2**20} MiB"):
        load_corpus(manifest, tmp_path)


def test_a_case_file_linked_out_of_the_corpus_folder_is_refused(tmp_path: Path) -> None:
    outside = tmp_path / "outside.gb"
    outside.write_bytes(b"secret")
    roms = tmp_path / "roms"
    roms.mkdir()
    (roms / "link.gb").symlink_to(outside)
    case = CorpusCase(
        id="c", file="link.gb", sha256=sha256_hex(b"secret"), suite="s", budget_frames=1
    )
    manifest = CorpusManifest(corpus_id="c", version="1", cases=(case,), denominator=1)
    with pytest.raises(FormatError, match="out of the corpus folder"):
        load_corpus(manifest, roms)


# -- corpus build: typed errors, nothing read outside the ROM folder ---------------------------


def _sums(folder: Path, text: bytes) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "SHA256SUMS").write_bytes(text)
    return folder


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (None, "cannot read checksum file"),
        (b"\xff\xfe\x00binary", "not UTF-8"),
        (b"not a checksum line\n", "line 1"),
        (f"{'0' * 64}  ../../../../etc/passwd\n".encode(), "relative path inside"),
        (f"{'0' * 64}  /etc/passwd\n".encode(), "relative path inside"),
        (f"{'0' * 64}  escape.gb\n".encode(), "out of the corpus folder"),
        (f"{'0' * 64}  missing.gb\n".encode(), "cannot read corpus file"),
    ],
)
def test_bad_checksum_files_raise_format_errors(
    tmp_path: Path, text: bytes | None, message: str
) -> None:
    roms = tmp_path / "roms"
    roms.mkdir()
    (roms / "escape.gb").symlink_to("/etc/passwd")
    if text is not None:
        _sums(roms, text)
    with pytest.raises(FormatError, match=message):
        read_sums(roms)


def test_corpus_build_without_checksums_is_a_format_error(tmp_path: Path) -> None:
    with pytest.raises(FormatError, match="SHA256SUMS"):
        _invoke("corpus", "build", "--roms", str(tmp_path), "--out", str(tmp_path / "out"))


def test_an_oversized_corpus_file_is_refused_not_cut(tmp_path: Path) -> None:
    data = bytes(MAX_ROM_BYTES + 1)
    (tmp_path / "huge.gb").write_bytes(data)
    _sums(tmp_path, f"{sha256_hex(data)}  huge.gb\n".encode())
    with pytest.raises(FormatError, match="limit"):
        read_sums(tmp_path)


@settings(max_examples=60, deadline=None)
@given(st.binary(max_size=300))
def test_any_checksum_file_reads_or_raises_a_format_error(text: bytes) -> None:
    with tempfile.TemporaryDirectory() as folder:
        root = _sums(Path(folder) / "roms", text)
        (root / "a.gb").write_bytes(b"rom")
        try:
            sums = read_sums(root)
        except FormatError:
            return
        assert all((root / name).resolve().is_relative_to(root.resolve()) for name in sums)


# -- a build cannot fill the disk --------------------------------------------------------------


def test_a_build_that_fills_the_workspace_is_stopped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    corpus = synthetic(tmp_path, {"calm": b"CALM" + bytes(300)})
    monkeypatch.setattr(_task, "MAX_BUILD_BYTES", 8 * 2**20)
    fill = (
        "i=0; while [ $i -lt 64 ]; do head -c 1048576 /dev/zero > f$i; i=$((i+1)); done; sleep 60"
    )
    task = synthetic_task(tmp_path, corpus, build=["/bin/sh", "-c", fill], build_seconds=30)
    report = _task.task_run_tests(task)
    assert report.entry.status == "build-failed"
    assert "build stopped" in report.build_log
    assert "8 MiB limit" in report.build_log


# -- a candidate started through a symlink -----------------------------------------------------


def test_a_candidate_named_through_a_symlink_runs(tmp_path: Path) -> None:
    corpus = synthetic(tmp_path / "corpus", {"calm": b"CALM" + bytes(300)})
    links = tmp_path / "links"
    links.mkdir()
    (links / "candidate.py").symlink_to(SYNTHETIC)
    out = tmp_path / "grade.json"
    result = _invoke(*_grade_args(corpus, f"{sys.executable} {links / 'candidate.py'}", out))
    assert result.exit_code == 0, result.output
    summary = json.loads(result.output)
    assert summary["passed"] == 1, summary["results"]


def test_a_build_printing_more_than_a_pipe_holds_finishes(tmp_path: Path) -> None:
    corpus = synthetic(tmp_path, {"calm": b"CALM" + bytes(300)})
    chatty = "head -c 300000 /dev/zero | tr '\\0' 'x'; echo; echo built"
    task = synthetic_task(tmp_path, corpus, build=["/bin/sh", "-c", chatty], build_seconds=20)
    report = _task.task_run_tests(task)
    assert report.entry.status == "graded"
    assert report.build_log.endswith("built\n")


def test_the_build_watch_counts_hard_links_once_and_stops_on_many_folders(tmp_path: Path) -> None:
    (tmp_path / "big").write_bytes(os.urandom(1 << 20))
    for n in range(10):
        os.link(tmp_path / "big", tmp_path / f"link{n}")
    used, files = disk_use([tmp_path], max_files=100)
    assert (1 << 20) <= used < (2 << 20)
    assert files == 11
    for n in range(30):
        (tmp_path / "folders" / str(n)).mkdir(parents=True)
    assert disk_use([tmp_path], max_files=5)[1] > 5


# -- why a candidate that closed its output failed ---------------------------------------------


@pytest.mark.parametrize("warm", [True, False], ids=["warm-jail", "fresh-jails"])
def test_a_candidate_closing_its_output_is_told_apart_from_one_that_crashed(
    tmp_path: Path, warm: bool
) -> None:
    corpus = synthetic(tmp_path, {"close": b"CLOSE" + bytes(300), "segv": b"SEGV" + bytes(300)})
    spec = command_candidate((sys.executable, str(CANDIDATES / "synthetic.py")), runtime="python")
    run = grade_candidate(
        load_corpus(corpus.manifest, corpus.roms),
        corpus.answers,
        spec,
        jobs=1,
        limits=JailLimits(wall_seconds=4.0, cpu_seconds=4),
        warm=warm,
    )
    seen = {o.case_id: o for o in run.observations}
    assert seen["segv"].outcome == "crash"
    assert "(exit status 139)" in seen["segv"].detail  # 128 + SIGSEGV: its own end
    # Still running when the grader stopped it: the kill is the grader's, no exit status of
    # its own. (Only the candidate holds its output pipe, in a fresh jail too: an end of
    # output, not a timeout.)
    close = seen["close"]
    assert close.outcome == "crash", close
    assert "exit status" not in close.detail, close.detail
    assert "still running" in close.detail


def test_the_build_watch_counts_files_past_the_path_limit(tmp_path: Path) -> None:
    """A build could write under a path longer than PATH_MAX, which cannot be opened by
    path: measured by descriptor, those bytes and files count as well."""
    fd = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for _ in range(24):  # 24 names of 200 bytes: past the 4,096-byte path limit
            os.mkdir("d" * 200, dir_fd=fd)
            inner = os.open("d" * 200, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = inner
        hidden = os.open("hidden", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd)
        os.write(hidden, os.urandom(1 << 20))
        os.close(hidden)
    finally:
        os.close(fd)
    used, files = disk_use([tmp_path], max_files=100)
    assert files == 1
    assert used >= 1 << 20
    assert disk_use([tmp_path], max_files=100) == (used, files)
