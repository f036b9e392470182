import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from playproof.core.contract import contract_hash, parse_contract
from playproof.errors import ContractError


def ms(mid: str, requires: list[str] | None = None, **check: Any) -> dict[str, Any]:
    check = check or {"kind": "state", "key": "x", "op": ">=", "value": 1}
    return {"id": mid, "requires": requires or [], "check": check}


def contract(*milestones: dict[str, Any]) -> dict[str, Any]:
    return {"schema": "playproof/contract/v1", "game": "toy", "milestones": list(milestones)}


def violations(data: dict[str, Any]) -> tuple[str, ...]:
    with pytest.raises(ContractError) as info:
        parse_contract(data)
    return info.value.violations


def test_diamond_dag_is_accepted() -> None:
    parsed = parse_contract(contract(ms("a"), ms("b", ["a"]), ms("c", ["a"]), ms("d", ["b", "c"])))
    assert parsed.ids == ("a", "b", "c", "d")


@pytest.mark.parametrize(
    ("data", "fragment"),
    [
        (contract(ms("a", ["b"]), ms("b", ["a"])), "cycle"),
        (contract(ms("a", ["b"]), ms("b")), "listed after it"),
        (contract(ms("a"), ms("a")), "used more than once"),
        (contract(ms("a", ["ghost"])), "unknown milestone 'ghost'"),
        (contract(), "no milestones"),
        (contract(ms("a", ["a"])), "requires itself"),
        (contract(ms("a", kind="state", key="x", op="~", value=1)), "op"),
        (contract(ms("a", kind="frame-hash", hash="xyz")), "hash"),
        (contract(ms("a", kind="state", key="x", op=">=", value=True)), "value"),
    ],
)
def test_each_violation_is_reported(data: dict[str, Any], fragment: str) -> None:
    assert any(fragment in v for v in violations(data))


def test_every_violation_is_reported_at_once() -> None:
    found = violations(
        contract(
            ms("a", ["c"]),
            ms("a", ["ghost"]),
            ms("c", ["a"]),
            ms("d", kind="event"),
        )
    )
    text = " | ".join(found)
    for fragment in (
        "used more than once",
        "unknown milestone 'ghost'",
        "listed after it",
        "cycle",
        "event",
    ):
        assert fragment in text
    assert len(found) >= 5


def test_legible_and_opaque_kinds() -> None:
    parsed = parse_contract(
        contract(
            ms("s"),
            ms("v", kind="save", key="k", op="==", value=3),
            ms("f", kind="frame", key="k", op="<", value=3),
            ms("e", kind="event", event="door"),
            ms("sh", kind="save-hash", hash="a" * 64),
            ms("fh", kind="frame-hash", hash="b" * 64),
        )
    )
    assert [m.check.legible for m in parsed.milestones] == [True, True, True, True, False, False]


def test_hash_is_stable_across_key_order_and_whitespace() -> None:
    data = contract(ms("a"), ms("b", ["a"], kind="event", event="x"))
    compact = json.dumps(data, separators=(",", ":"))
    spaced = json.dumps(data, indent=7, sort_keys=True)
    reordered = json.dumps(dict(reversed(list(data.items()))))
    hashes = {
        contract_hash(parse_contract(json.loads(text))) for text in (compact, spaced, reordered)
    }
    assert len(hashes) == 1


def test_hash_changes_with_any_semantic_edit() -> None:
    base = parse_contract(contract(ms("a"))).hash
    assert parse_contract(contract(ms("a", kind="state", key="x", op=">=", value=2))).hash != base
    assert parse_contract(contract(ms("b"))).hash != base


ids = st.lists(
    st.from_regex(r"[a-z][a-z0-9]{0,5}", fullmatch=True), min_size=1, max_size=6, unique=True
)


@given(ids, st.randoms(use_true_random=False))
def test_hash_invariant_under_key_order(names: list[str], rnd: Any) -> None:
    milestones = [ms(name, names[:i][-1:]) for i, name in enumerate(names)]
    data = contract(*milestones)

    def shuffled(value: Any) -> Any:
        if isinstance(value, dict):
            items = list(value.items())
            rnd.shuffle(items)
            return {k: shuffled(v) for k, v in items}
        if isinstance(value, list):
            return [shuffled(v) for v in value]
        return value

    assert parse_contract(shuffled(data)).hash == parse_contract(data).hash


def test_cached_hash_equals_the_computed_hash_and_follows_copies() -> None:
    parsed = parse_contract(contract(ms("a"), ms("b", ["a"])))
    fresh = parse_contract(contract(ms("a"), ms("b", ["a"])))
    first = parsed.hash
    assert first == contract_hash(parsed) == parsed.hash  # computed, then served from the memo
    # The memo is not a field: equality, dumps and the hash of the model ignore it.
    assert parsed == fresh
    assert fresh == parsed
    assert hash(parsed) == hash(fresh)
    assert parsed.to_json() == fresh.to_json()
    assert "memo" not in parsed.model_dump_json()
    # A copy that swaps a field must not reuse the memo of its source.
    renamed = parsed.model_copy(update={"game": "other"})
    assert renamed.hash == contract_hash(renamed) != first
    shorter = parsed.model_copy(update={"milestones": parsed.milestones[:1]})
    assert shorter.hash == contract_hash(shorter) != first
    assert parsed.model_copy(deep=True).hash == first
