"""``task init`` writes the whole candidate protocol from the package, installed or not."""

import shutil
import subprocess
import sys
from pathlib import Path

import playproof
from playproof.corpus._shipped import PROTOCOL, protocol_text
from playproof.corpus._task import init_task

PACKAGE = Path(playproof.__file__).resolve().parent
INIT = """
import sys
sys.path.insert(0, sys.argv[1])
from pathlib import Path
import playproof
from playproof.corpus._task import init_task
init_task(Path(sys.argv[2]))
print(playproof.__file__)
"""


def test_task_init_writes_the_shipped_protocol(tmp_path: Path) -> None:
    init_task(tmp_path / "task")
    written = (tmp_path / "task" / "PROTOCOL.md").read_bytes()
    assert written == PROTOCOL.read_bytes() == protocol_text()
    assert b"## Requests" in written
    assert b"`LOAD <n>`" in written


def test_a_copy_of_the_package_away_from_the_checkout_writes_it_too(tmp_path: Path) -> None:
    # The package alone, as a wheel installs it: no docs folder anywhere above it.
    site = tmp_path / "site"
    shutil.copytree(
        PACKAGE, site / "playproof", ignore=shutil.ignore_patterns("data", "__pycache__")
    )
    done = subprocess.run(
        [sys.executable, "-I", "-c", INIT, str(site), str(tmp_path / "task")],
        check=True,
        timeout=120,
        capture_output=True,
        text=True,
    )
    assert Path(done.stdout.strip()).is_relative_to(site)
    assert (tmp_path / "task" / "PROTOCOL.md").read_bytes() == PROTOCOL.read_bytes()


def test_no_module_reads_run_time_data_from_the_checkout() -> None:
    for source in PACKAGE.rglob("*.py"):
        text = source.read_text("utf-8")
        assert "project_root" not in text, source
        assert "parents[3]" not in text, source
