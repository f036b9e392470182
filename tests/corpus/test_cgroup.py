"""A candidate's processes share one memory total, and cleaning up its home costs little.

The jail's rlimits bound each process (address space) and each uid
(processes); a candidate whose processes each stay under them could still
exhaust the grader's host together. As root each candidate process runs in a
control group of its own; these tests grade a candidate that forks children
whose memory passes the total while each stays far under the per-process
limit, and one that fills its home with as many files as it can.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pytest

from playproof.corpus import JailLimits, _cgroup, bubblewrap_usable, grade_candidate, load_corpus
from playproof.corpus._cgroup import MemoryContainmentWarning, cgroup_layout
from playproof.corpus._jail import JailSpec
from playproof.corpus._record import GradeRecord
from playproof.corpus._warm import CASE_HOME_FILES, warm_usable

from .conftest import no_jail_processes_left

TOTAL = 256 * 1024**2
"""A small total, so the test needs little memory: 4 children of 96 MiB pass it."""
LIMITS = JailLimits(wall_seconds=10.0, cpu_seconds=20, total_memory_bytes=TOTAL)
needs_cgroup = pytest.mark.skipif(
    not bubblewrap_usable() or cgroup_layout() is None,
    reason="needs root, bubblewrap and a writable cgroup hierarchy",
)


def _groups() -> set[Path]:
    layout = cgroup_layout()
    assert layout is not None
    return {child for folder in layout.folders for child in folder.iterdir() if child.is_dir()}


@needs_cgroup
@pytest.mark.parametrize("warm", [True, False])
def test_processes_that_pass_the_total_together_fail_their_case_only(
    subset: Any, cheat: Any, warm: bool
) -> None:
    before = _groups()
    corpus = load_corpus(subset.manifest, subset.roms)
    hog = cheat("memory_hog", HOG_CHILDREN="4", HOG_MIB="96")
    # Each child (96 MiB) is far under the 4 GiB per-process address space; together
    # (384 MiB) they pass the 256 MiB total.
    assert LIMITS.address_space_bytes > 96 * 1024**2
    run = grade_candidate(corpus, subset.answers, hog, jobs=1, limits=LIMITS, warm=warm)
    # The grading went on past every case (this process survived to see it) ...
    assert len(run.grade.results) == run.grade.denominator == 4
    assert run.grade.passed == 0
    # ... and each case failed for the memory limit, said as such.
    for result in run.grade.results:
        assert "memory limit" in result.reason, result.reason
        assert f"{TOTAL // 2**20} MiB" in result.reason
    assert run.record.memory_cgroup == cgroup_layout().kind  # type: ignore[union-attr]
    assert run.record.limits["total_memory_bytes"] == TOTAL
    assert run.record.sandbox == ("per-slot" if warm else "per-process")
    # No group is left behind, nor any process of the jail's uids.
    assert _groups() == before
    no_jail_processes_left()


@needs_cgroup
def test_a_candidate_under_the_total_is_not_touched(subset: Any, cheat: Any) -> None:
    corpus = load_corpus(subset.manifest, subset.roms)
    calm = cheat("memory_hog", HOG_CHILDREN="2", HOG_MIB="32")
    run = grade_candidate(corpus, subset.answers, calm, jobs=1, limits=LIMITS)
    assert all(o.outcome == "ok" for o in run.observations)
    assert all("memory" not in r.reason for r in run.grade.results)


@pytest.mark.skipif(
    not bubblewrap_usable(), reason="the fallback is recorded for a bubblewrap grading"
)
def test_without_a_group_the_grade_says_so_and_one_warning_does(
    subset: Any, cheat: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_cgroup, "cgroup_layout", lambda: None)
    monkeypatch.setattr(_cgroup, "_said", [])
    corpus = load_corpus(subset.manifest, subset.roms)

    def twice() -> list[str | None]:
        return [
            grade_candidate(
                corpus, subset.answers, cheat("always_passed"), limits=LIMITS
            ).record.memory_cgroup
            for _ in range(2)
        ]

    with pytest.warns(MemoryContainmentWarning, match="not in total") as caught:
        recorded = twice()
    assert len([w for w in caught if w.category is MemoryContainmentWarning]) == 1
    assert recorded == ["none", "none"]


def test_a_record_written_before_the_field_still_reads(subset: Any, cheat: Any) -> None:
    corpus = load_corpus(subset.manifest, subset.roms)
    run = grade_candidate(corpus, subset.answers, cheat("always_passed"), limits=LIMITS)
    old = run.record.to_json()
    old.pop("memory_cgroup")
    old["limits"].pop("total_memory_bytes")
    assert GradeRecord.model_validate(old).memory_cgroup is None


@pytest.mark.skipif(not warm_usable(JailSpec()), reason="the warm jail needs root and bubblewrap")
def test_a_home_full_of_files_is_bounded_and_freed_at_once(subset: Any, cheat: Any) -> None:
    """200 000 files in a warm case's home took about 0.9 s each to remove; now it stops."""
    corpus = load_corpus(subset.manifest, subset.roms)
    before = set(os.listdir("/tmp"))
    run = grade_candidate(
        corpus, subset.answers, cheat("many_files", FILES="200000"), jobs=1, limits=LIMITS
    )
    assert run.record.sandbox == "per-slot"
    for observation in run.observations:
        assert f"made {CASE_HOME_FILES - 1} files" in observation.stderr_tail
        assert "No space left on device" in observation.stderr_tail
    left = {name for name in set(os.listdir("/tmp")) - before if name.startswith("playproof-")}
    assert left == set()
    no_jail_processes_left()


@needs_cgroup
def test_groups_a_dead_grader_left_are_removed_with_what_runs_in_them() -> None:
    import subprocess

    layout = cgroup_layout()
    assert layout is not None
    ended = subprocess.Popen(["true"])
    ended.wait()
    stale = _cgroup.Cgroup.make(layout, f"slot-{ended.pid}-1", None, None, nest=True)
    case = _cgroup.Cgroup.make(layout, "case-1", TOTAL, 4, parent=stale)
    sleeper = subprocess.Popen(_cgroup.join_command(case, ["sleep", "60"]))
    try:
        time.sleep(0.2)
        assert case._pids() == [sleeper.pid]
        kept = _cgroup.Cgroup.make(layout, f"slot-{os.getpid()}-999", None, None, nest=True)
        try:
            _cgroup._remove_stale(layout)
            assert not any(path.exists() for path in stale.paths)
            assert all(path.exists() for path in kept.paths)  # a live grader's group stays
            assert sleeper.wait(timeout=5) != 0  # killed with its group
        finally:
            kept.remove()
    finally:
        sleeper.kill()
        sleeper.wait()
        stale.remove()


@needs_cgroup
def test_slots_that_ask_at_once_all_find_the_groups() -> None:
    # Two slots of one grading once probed at the same moment under one group name, and
    # the loser recorded ``memory_cgroup: none``.
    from concurrent.futures import ThreadPoolExecutor

    for _ in range(5):
        _cgroup._probed_layout.cache_clear()
        with ThreadPoolExecutor(8) as pool:
            found = list(pool.map(lambda _: cgroup_layout(), range(8)))
        assert None not in found
        assert len(set(found)) == 1


@needs_cgroup
def test_a_build_whose_processes_pass_the_total_together_fails_with_the_reason(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from playproof.corpus import _task

    from .test_trust import _run
    from .test_trust import _task as make_task

    monkeypatch.setattr(_task, "BUILD_MEMORY_BYTES", TOTAL)
    # Four shells that each hold about 100 MB: far under the per-process limit, past the total.
    hold = "x=$(head -c 100000000 /dev/zero | tr '\\0' a); sleep 60"
    hog = f"for i in 1 2 3 4; do ({hold}) & done; wait"
    before = _groups()
    report = _run(make_task(tmp_path, feedback="disabled", build=["/bin/sh", "-c", hog]))
    assert report["status"] == "build-failed"
    stopped = f"build stopped: memory limit: its processes together passed {TOTAL // 2**20} MiB"
    assert report["build_log"].startswith(stopped), report
    assert _groups() == before  # the build's group is gone with it
    no_jail_processes_left()


def test_the_cgroup_v2_layout_writes_what_the_kernel_reads(tmp_path: Path) -> None:
    """cgroup v2 on a stand-in tree: this host's memory controller is bound to v1, so the
    kernel's side cannot run here; what playproof writes, and where, is checked instead."""
    root = tmp_path / "cgroup"
    root.mkdir()
    (root / "cgroup.subtree_control").write_text("cpu\n")
    (root / "cgroup.controllers").write_text("cpu io pids\n")
    assert _cgroup._probe_v2(root) is None  # no memory controller: not usable

    (root / "cgroup.controllers").write_text("cpuset cpu io memory hugetlb pids\n")
    layout = _cgroup._probe_v2(root)
    assert layout == _cgroup.CgroupLayout("v2", (root / _cgroup.CGROUP_FOLDER,))
    assert (root / "cgroup.subtree_control").read_text() == "+memory +pids"
    assert (root / _cgroup.CGROUP_FOLDER / "cgroup.subtree_control").read_text() == "+memory +pids"

    slot = _cgroup.Cgroup.make(layout, "slot-1-1", None, None, nest=True)
    case = _cgroup.Cgroup.make(layout, "case-1-2", TOTAL, 72, parent=slot)
    folder = root / _cgroup.CGROUP_FOLDER / "slot-1-1" / "case-1-2"
    assert case.paths == (folder,)
    written = {p.name: p.read_text() for p in folder.iterdir()}
    assert written == {"memory.max": str(TOTAL), "memory.oom.group": "1", "pids.max": "72"}
    assert (folder.parent / "cgroup.subtree_control").read_text() == "+memory +pids"
    assert not (folder.parent / "memory.max").exists()  # None: the parent's limits hold
    assert case.procs_files == (folder / "cgroup.procs",)
    script = _cgroup.join_command(case, ["/bin/true"])
    assert str(folder / "cgroup.procs") in script
    assert script[-2:] == ["--", "/bin/true"]

    assert case.oom_kills() == 0  # no memory.events yet
    (folder / "memory.events").write_text("low 0\nhigh 0\nmax 9\noom 2\noom_kill 2\n")
    assert case.oom_kills() == 2
