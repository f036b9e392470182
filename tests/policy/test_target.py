"""The solana/swap target loads without the Solana runtime and asks for the extra when opened."""

import subprocess
import sys

import pytest

from playproof.errors import TargetError
from playproof.targets import _registry, get_target

_LAZY = """
import sys
import playproof.policy
from playproof.targets import get_target
target = get_target("solana/swap")
assert target.spec.extra == "solana"
assert get_target("solana/rebalance").spec.extra == "solana"
print(sorted(m for m in sys.modules if m.startswith("solders")))
"""


def test_loading_the_target_and_the_checks_imports_no_solana_library() -> None:
    out = subprocess.run(
        [sys.executable, "-c", _LAZY], capture_output=True, text=True, timeout=120, check=True
    )
    assert out.stdout.strip() == "[]"


def test_a_missing_solders_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    real = _registry.find_spec

    def hide_solders(name: str, *args: object) -> object:
        return None if name == "solders" else real(name)

    monkeypatch.setattr(_registry, "find_spec", hide_solders)
    for name in ("solana/swap", "solana/rebalance"):
        with pytest.raises(TargetError, match=r"pip install 'playproof\[solana\]'"):
            get_target(name).open()


def test_the_stored_calibration_is_current_and_backs_the_claim() -> None:
    pytest.importorskip("solders", reason="the Solana world needs the solana extra")
    from playproof.exec import (
        CALIBRATION_FILE,
        calibrate_target,
        read_calibration,
        render_calibration,
        stored_calibration_problems,
    )

    target = get_target("solana/swap")
    assert target.folder is not None
    assert stored_calibration_problems(target) == []
    stored = (target.folder / CALIBRATION_FILE).read_text()
    assert read_calibration(target.folder / CALIBRATION_FILE).passed is True
    assert target.spec.separates is True
    assert render_calibration(calibrate_target(target, executor="serial")) == stored
