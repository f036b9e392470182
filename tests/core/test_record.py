"""Run record fields added later: absent means unknown, and the JSON round trip is exact."""

import base64
import json
from pathlib import Path
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from playproof.core.record import RunRecord

FIXTURE = Path(__file__).parents[1] / "fixtures" / "records" / "v1-2048-signed.json"
BASE: dict[str, Any] = json.loads(base64.b64decode(json.loads(FIXTURE.read_text())["payload"]))[
    "predicate"
]
HEX = "0123456789abcdef"

settings = st.fixed_dictionaries(
    {},
    optional={
        "agent": st.text(max_size=40),
        "worker": st.booleans(),
        "vision": st.booleans(),
        "history": st.integers(0, 100),
        "options": st.dictionaries(
            st.text(min_size=1, max_size=10),
            st.one_of(st.none(), st.booleans(), st.integers(-5, 5), st.text(max_size=10)),
            max_size=3,
        ),
    },
)
later = st.fixed_dictionaries(
    {},
    optional={
        "roms": st.dictionaries(
            st.text(min_size=1, max_size=20), st.text(HEX, min_size=64, max_size=64), max_size=2
        ),
        "source": st.fixed_dictionaries(
            {"commit": st.text(HEX, min_size=40, max_size=40), "dirty": st.booleans()}
        ),
        "settings": settings,
    },
)


@given(provenance=later, calibrated=st.one_of(st.none(), st.booleans()), identity=st.booleans())
def test_a_record_round_trips_exactly_with_or_without_later_fields(
    provenance: dict[str, Any], calibrated: bool | None, identity: bool
) -> None:
    raw = json.loads(json.dumps(BASE))
    raw["provenance"].update(provenance)
    if calibrated is not None:
        raw["target"]["calibrated"] = calibrated
    if identity:
        raw["milestones_identity"] = 0
        raw["identity_claimed"] = []
    record = RunRecord.model_validate(raw)
    dumped = record.to_json()
    assert RunRecord.model_validate(dumped) == record
    # Settings are filled with their defaults; everything else is kept exactly as it was.
    dumped_settings = dumped["provenance"].pop("settings", None)
    raw_settings = raw["provenance"].pop("settings", None)
    assert dumped == raw
    if raw_settings is not None:
        assert dumped_settings is not None
        assert raw_settings.items() <= dumped_settings.items()
    assert ("calibrated" in dumped["target"]) == (calibrated is not None)
    assert ("milestones_identity" in dumped) == identity
    for name in ("roms", "source"):
        assert (name in dumped["provenance"]) == (name in provenance)
    assert (dumped_settings is not None) == ("settings" in provenance)
