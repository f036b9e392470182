"""The sdist and the wheel carry everything: installed alone, playproof grades and verifies.

The sdist is built from the checkout, the wheel from the sdist (as a package
index would build it), and the wheel is installed with its ``pyboy`` extra into
a fresh virtual environment that sees nothing of the checkout. The installed
``playproof`` command then runs from an empty folder.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

PROJECT = Path(__file__).resolve().parents[1]
PACKAGE = PROJECT / "src" / "playproof"
CORPUS_DATA = PACKAGE / "corpus" / "data"
BUILD_SECONDS = 600
"""Creating a virtual environment and installing packages (from the index) into it."""
COMMAND_SECONDS = 900
"""One ``playproof`` command: grading the whole Blargg corpus is the longest."""
HIDDEN_ENV = ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "PLAYPROOF_KEY_DIR")
"""Variables that could let the installed package see the checkout or another key folder."""


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k not in HIDDEN_ENV}


def _run(args: list[str | Path], cwd: Path, timeout: float) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(a) for a in args],
        cwd=cwd,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def _ok(args: list[str | Path], cwd: Path, timeout: float = BUILD_SECONDS) -> str:
    done = _run(args, cwd, timeout)
    assert done.returncode == 0, f"{args} exited {done.returncode}:\n{done.stderr[-3000:]}"
    return done.stdout


def _package_data() -> set[str]:
    """Every file of the package that is not Python source (paths relative to src/)."""
    return {
        path.relative_to(PACKAGE.parent).as_posix()
        for path in PACKAGE.rglob("*")
        if path.is_file() and path.suffix not in {".py", ".pyc"} and "__pycache__" not in path.parts
    }


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(sdist, wheel built from that sdist)."""
    root = tmp_path_factory.mktemp("dist")
    builder = root / "builder"
    _ok([sys.executable, "-m", "venv", builder], root)
    python = builder / "bin" / "python"
    _ok([python, "-m", "pip", "install", "--quiet", "hatchling>=1.27"], root)
    out = root / "out"
    _ok([python, "-m", "hatchling", "build", "--target", "sdist", "--directory", out], PROJECT)
    (sdist,) = out.glob("playproof-*.tar.gz")
    _ok([python, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-w", out, sdist], root)
    (wheel,) = out.glob("playproof-*.whl")
    return sdist, wheel


@pytest.fixture(scope="module")
def venv(dist: tuple[Path, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh virtual environment holding only the wheel and its dependencies."""
    folder = tmp_path_factory.mktemp("venv") / "env"
    _ok([sys.executable, "-m", "venv", folder], folder.parent)
    python = folder / "bin" / "python"
    _ok([python, "-m", "pip", "install", "--quiet", f"{dist[1]}[pyboy]"], folder.parent)
    return folder


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    """An empty folder with no checkout around it."""
    folder = tmp_path / "work"
    folder.mkdir()
    assert not any((parent / "pyproject.toml").exists() for parent in folder.parents)
    return folder


def test_sdist_and_wheel_hold_every_data_file_and_the_licences(dist: tuple[Path, Path]) -> None:
    sdist, wheel = dist
    expected = _package_data()
    for corpus in ("blargg", "chip8", "dmg-acid2", "mooneye"):
        assert {
            f"playproof/corpus/data/{corpus}/roms/{n}" for n in ("SHA256SUMS", "SOURCE.md")
        } <= expected
    with tarfile.open(sdist) as archive:
        prefix = archive.getnames()[0].split("/")[0]
        in_sdist = {name.removeprefix(f"{prefix}/") for name in archive.getnames()}
    assert {f"src/{p}" for p in expected} <= in_sdist
    assert "LICENSE" in in_sdist
    with zipfile.ZipFile(wheel) as archive:
        in_wheel = set(archive.namelist())
        metadata = archive.read(f"{prefix}.dist-info/METADATA").decode()
    assert expected <= in_wheel
    assert f"{prefix}.dist-info/licenses/LICENSE" in in_wheel
    assert "License-Expression: Apache-2.0 AND MIT AND GPL-3.0-only" in metadata


def test_the_installed_package_holds_the_corpora(venv: Path, workdir: Path) -> None:
    script = (
        "import json, playproof\n"
        "from importlib.resources import files\n"
        "data = files('playproof.corpus') / 'data'\n"
        "def walk(node, prefix):\n"
        "    for child in node.iterdir():\n"
        "        name = prefix + child.name\n"
        "        if child.is_dir():\n"
        "            yield from walk(child, name + '/')\n"
        "        else:\n"
        "            yield name\n"
        "print(json.dumps({'package': playproof.__file__, 'files': sorted(walk(data, ''))}))\n"
    )
    found = json.loads(_ok([venv / "bin" / "python", "-c", script], workdir))
    assert Path(found["package"]).is_relative_to(venv)
    shipped = {p.relative_to(CORPUS_DATA).as_posix() for p in CORPUS_DATA.rglob("*") if p.is_file()}
    assert set(found["files"]) == shipped
    assert "mooneye/roms/SHA256SUMS" in shipped
    assert "chip8/roms/bin/1-chip8-logo.ch8" in shipped


def test_the_installed_command_grades_the_shipped_blargg_corpus(venv: Path, workdir: Path) -> None:
    playproof = venv / "bin" / "playproof"
    common = ["--key-dir", "keys", "--json"]
    grade_args = ["--corpus", "blargg", "--jobs", "2", "--reuse", "8", "--out", "grade.json"]
    graded = _ok(
        [playproof, "grade", "--candidate", "reference", *grade_args, *common],
        workdir,
        COMMAND_SECONDS,
    )
    grade = json.loads(graded)
    assert grade["passed"] == grade["denominator"] == 43
    assert (grade["trust"], grade["reward"]) == ("trusted", 43)  # the signature ships
    assert all(r["passed"] for r in grade["results"])
    where = (
        "import json, playproof.corpus as c; print(json.dumps(str(c.shipped_paths('blargg')[0])))"
    )
    manifest = json.loads(_ok([venv / "bin" / "python", "-c", where], workdir))
    assert Path(manifest).is_relative_to(venv)
    checked = json.loads(
        _ok([playproof, "verify-grade", "grade.json", "--manifest", manifest, *common], workdir)
    )
    assert checked["verdict"] == "clean"
    assert {c["id"] for c in checked["checks"]} >= {"corpus-pinned", "grade-consistent"}


def test_the_installed_command_runs_and_verifies_a_packaged_target(
    venv: Path, workdir: Path
) -> None:
    playproof = venv / "bin" / "playproof"
    common = ["--key-dir", "keys", "--json"]
    ran = json.loads(
        _ok(
            [playproof, "run", "native/2048", "--agent", "reference", "--out", "run.json", *common],
            workdir,
            COMMAND_SECONDS,
        )
    )
    assert ran["claimed"]
    report = json.loads(_ok([playproof, "verify", "run.json", *common], workdir, COMMAND_SECONDS))
    assert report["verdict"] == "clean"
    assert sorted(report["verified"]) == sorted(ran["claimed"])
    tampered = json.loads((workdir / "run.json").read_text())
    tampered["signatures"][0]["sig"] = "A" * len(tampered["signatures"][0]["sig"])
    (workdir / "forged.json").write_text(json.dumps(tampered))
    rejected = _run([playproof, "verify", "forged.json", *common], workdir, COMMAND_SECONDS)
    assert rejected.returncode == 1, rejected.stderr[-2000:]
    assert json.loads(rejected.stdout)["verdict"] == "rejected"


def test_the_installed_task_init_writes_the_whole_protocol(venv: Path, workdir: Path) -> None:
    _ok([venv / "bin" / "playproof", "task", "init", "task"], workdir, COMMAND_SECONDS)
    written = (workdir / "task" / "PROTOCOL.md").read_bytes()
    assert written == (PACKAGE / "corpus" / "PROTOCOL.md").read_bytes()
    assert b"## Requests" in written
