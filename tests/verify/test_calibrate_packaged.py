"""Every packaged target ships a current calibration report that backs its claim honestly."""

import importlib.util

import pytest

from playproof.exec import (
    CALIBRATION_FILE,
    calibrate_target,
    read_calibration,
    render_calibration,
    stored_calibration_problems,
)
from playproof.targets import load_target_dir
from playproof.targets.packaged import DATA

FOLDERS = sorted(path.parent for path in DATA.glob("*/*/target.json"))
EXTRAS = {
    "native": None,
    "ale": "ale_py",
    "gym": "gymnasium",
    "pyboy": "pyboy",
    "retro": "stable_retro",
}


def _installed(family: str) -> bool:
    module = EXTRAS.get(family)
    return module is None or importlib.util.find_spec(module) is not None


def test_there_are_packaged_targets() -> None:
    assert any(folder.parent.name == "native" for folder in FOLDERS)


@pytest.mark.parametrize("folder", FOLDERS, ids=lambda f: f"{f.parent.name}/{f.name}")
def test_stored_calibration_is_current_and_the_claim_honest(folder) -> None:  # type: ignore[no-untyped-def]
    target = load_target_dir(folder)
    assert (folder / CALIBRATION_FILE).is_file(), f"run: playproof calibrate {target.name} --write"
    assert stored_calibration_problems(target) == []
    report = read_calibration(folder / CALIBRATION_FILE)
    assert report.passed == bool(target.spec.separates)
    if not report.passed:
        assert target.spec.separation_note.strip()


@pytest.mark.parametrize("name", ["native/2048", "gym/cartpole", "gym/frozenlake"], ids=lambda n: n)
def test_cheap_targets_recalibrate_to_the_stored_report(name: str) -> None:
    family, leaf = name.split("/")
    if not _installed(family):
        pytest.skip(f"needs the {family} extra")
    target = load_target_dir(DATA / family / leaf)
    fresh = calibrate_target(target, executor="serial")
    assert render_calibration(fresh) == (target.folder / CALIBRATION_FILE).read_text()  # type: ignore[operator]


@pytest.mark.slow
@pytest.mark.skipif(not _installed("ale"), reason="needs playproof[ale]")
def test_ale_breakout_separates_with_its_packaged_reference() -> None:
    target = load_target_dir(DATA / "ale" / "breakout")
    report = calibrate_target(target, executor="local")
    assert report.separates, report.message
    assert report.passed, report.message
    rows = {row.id: row for row in report.milestones}
    assert rows["score-300"].verdict == "separates"
    assert render_calibration(report) == (target.folder / CALIBRATION_FILE).read_text()  # type: ignore[operator]


def test_a_stale_excuse_on_a_separating_contract_fails(tmp_path) -> None:  # type: ignore[no-untyped-def]
    source = DATA / "native" / "2048"
    folder = tmp_path / "2048"
    folder.mkdir()
    for name in ("contract.json", "reference.txt", "target.json", CALIBRATION_FILE):
        (folder / name).write_bytes((source / name).read_bytes())
    stored = read_calibration(folder / CALIBRATION_FILE)
    faked = stored.model_copy(update={"passed": True, "separates": True})
    (folder / CALIBRATION_FILE).write_text(render_calibration(faked))
    problems = stored_calibration_problems(load_target_dir(folder))
    assert any("stale excuse" in p for p in problems)
    (folder / CALIBRATION_FILE).unlink()
    assert stored_calibration_problems(load_target_dir(folder)) == [
        "target native/2048 has no stored calibration.json"
    ]
