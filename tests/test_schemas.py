"""The checked-in JSON Schemas equal what the models generate (regenerate: make schemas)."""

from pathlib import Path

import pytest

from playproof.schemas import SCHEMAS, render

FOLDER = Path(__file__).resolve().parents[1] / "schemas"


@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_schema_is_current(name: str) -> None:
    path = FOLDER / f"{name}.schema.json"
    assert path.exists(), f"{path.name} is missing; run make schemas"
    assert path.read_text(encoding="utf-8") == render(name), (
        f"{path.name} drifted; run make schemas"
    )


def test_no_stale_schema_files() -> None:
    assert {p.name.removesuffix(".schema.json") for p in FOLDER.glob("*.schema.json")} == set(
        SCHEMAS
    )
