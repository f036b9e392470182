"""A verifier runs only code it chose: never a module beside the records, never one a record names.

The replay worker was started with ``python -m``, which puts the working
folder first on the import path: a ``gymnasium.py`` next to the records being
verified ran inside the verifier. And a record could name the ad-hoc target
``gym:MODULE:Id``, which imports MODULE to register the id, or a RetroArch
core by its library path.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import playproof
from playproof.core.record import RunRecord
from playproof.targets import get_target
from playproof.targets._adhoc import code_named_by

MARKER = "ran.txt"


def _plant(folder: Path, module: str) -> Path:
    """A module that notes it ran (and then breaks the import it shadows)."""
    marker = folder / MARKER
    (folder / f"{module}.py").write_text(
        f"open({str(marker)!r}, 'a').write('{module} ran\\n')\nraise ImportError('shadowed')\n"
    )
    return marker


@pytest.fixture(scope="module")
def cartpole() -> RunRecord:
    return playproof.run("gym/cartpole", playproof.BaselineDriver("round-robin"), max_turns=8)


def test_a_module_beside_the_records_is_never_imported_by_the_replay_worker(
    cartpole: RunRecord, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    marker = _plant(tmp_path, "gymnasium")
    _plant(tmp_path, "numpy")
    signer = playproof.SigningKey.generate()
    body = playproof.sign_record(cartpole, signer).to_bytes()
    monkeypatch.chdir(tmp_path)
    report = playproof.verify_signed(body, signer.verifying_key)
    assert report.clean, report.failed()
    assert not marker.exists()


def test_a_record_cannot_name_a_module_for_the_verifier_to_import(
    cartpole: RunRecord, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    marker = _plant(tmp_path, "evilmod")
    data = cartpole.to_json()
    named = RunRecord.model_validate(
        {**data, "target": {**data["target"], "name": "gym:evilmod:CartPole-v1"}}
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))  # even where the module could be found
    contract = get_target("gym/cartpole").contract
    report = playproof.verify_record(named, contract=contract)
    failed = {c.id: c.reason for c in report.failed()}
    assert "import the Python module 'evilmod'" in failed["target-pinned"]
    assert "--target" in failed["target-pinned"]
    assert not marker.exists()


@pytest.mark.parametrize(
    ("spec", "chosen"),
    [
        ("gym:CartPole-v1", None),
        ("gym:evil:CartPole-v1", "module 'evil'"),
        ("retroarch:gambatte:game.gb", None),
        ("retroarch:/tmp/evil_libretro.so:game.gb", "library '/tmp/evil_libretro.so'"),
        ("gb:game.gb", None),
        ("native/2048", None),
    ],
)
def test_which_specs_choose_code(spec: str, chosen: str | None) -> None:
    found = code_named_by(spec)
    assert (found is None) == (chosen is None)
    if chosen is not None:
        assert found is not None
        assert chosen in found
