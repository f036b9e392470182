"""What a node needs to grade a corpus: the probe each Ray node runs before any case."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

from playproof.corpus import reference_candidate_spec
from playproof.corpus._runner import CandidateSpec
from playproof.exec._grading import grading_probe, jail_problem


def test_the_probe_names_a_missing_or_changed_candidate_file(tmp_path: Path) -> None:
    script = tmp_path / "candidate.py"
    script.write_text("print('hi')\n")
    build = tmp_path / "build"
    build.mkdir()
    probe = grading_probe(
        CandidateSpec(command=(sys.executable, str(script)), read_only=(build,)),
        reference_candidate_spec("chip8"),
    )
    assert (str(script), script.stat().st_size) in [(p, s) for p, s, _ in probe.files]
    assert str(build) in probe.folders
    jail = jail_problem()
    if jail is not None:
        pytest.skip(f"this machine cannot build the jail: {jail}")
    assert probe() is None
    script.write_text("print('ho')\n")  # same size, other bytes
    assert probe() == f"the candidate's file {script} is missing or differs from this machine's"
    script.unlink()
    assert probe() == f"the candidate's file {script} is missing or differs from this machine's"
    script.write_text("print('hi')\n")
    build.rmdir()
    assert probe() == f"the candidate's folder {build} is missing"


def test_a_machine_without_bubblewrap_or_prlimit_is_told_what_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    real = shutil.which
    for missing, said in (("bwrap", "bubblewrap is not"), ("prlimit", "prlimit is not")):
        monkeypatch.setattr(
            shutil, "which", lambda name, *a, _m=missing, **k: None if name == _m else real(name)
        )
        problem = jail_problem()
        assert problem is not None
        assert problem.startswith(said)
        assert "apt-get install" in problem


def test_bubblewrap_that_cannot_start_a_jail_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    if shutil.which("bwrap") is None or shutil.which("prlimit") is None:
        pytest.skip("bubblewrap or prlimit is not installed here")
    monkeypatch.setattr("playproof.exec._grading.bubblewrap_usable", lambda: False)
    problem = jail_problem()
    assert problem is not None
    assert "cannot create the jail's namespaces" in problem
