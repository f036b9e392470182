import math
from typing import Annotated, Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from playproof.core.chain import MAX_INPUT_BYTES, Decision, chain_head, genesis_hash, link_hash

decisions = st.lists(
    st.tuples(
        st.text(min_size=1, max_size=12),
        st.none() | st.floats(min_value=0, max_value=10, allow_nan=False),
        st.floats(min_value=0, max_value=1e6, allow_nan=False),
    ),
    max_size=12,
)


def build(raw: list[tuple[str, float | None, float]]) -> list[Decision]:
    return [
        Decision(turn=i, input=w, cost_usd=c, latency_ms=ms) for i, (w, c, ms) in enumerate(raw, 1)
    ]


@given(decisions, st.integers(0, 2**53 - 2))
def test_chain_recomputes_and_any_edit_changes_the_head(
    raw: list[tuple[str, float | None, float]], seed: int
) -> None:
    start = genesis_hash("g", "0" * 64, "1" * 64, seed=seed)
    chain = build(raw)
    head = chain_head(start, chain)
    assert head == chain_head(start, [Decision.model_validate(d.model_dump()) for d in chain])
    if chain:
        edited = [*chain[:-1], chain[-1].model_copy(update={"input": chain[-1].input + "x"})]
        assert chain_head(start, edited) != head
        assert chain_head(start, chain[:-1]) != head
    assert chain_head(genesis_hash("g", "0" * 64, "1" * 64, seed=seed + 1), chain) != head


def test_genesis_binds_every_part_of_the_target() -> None:
    base = genesis_hash("g", "0" * 64, "1" * 64, seed=1)
    assert genesis_hash("h", "0" * 64, "1" * 64, seed=1) != base
    assert genesis_hash("g", "2" * 64, "1" * 64, seed=1) != base
    assert genesis_hash("g", "0" * 64, "3" * 64, seed=1) != base


def test_latency_is_not_chained_so_equal_decisions_give_equal_heads() -> None:
    a = Decision(turn=1, input="up", cost_usd=0.5, latency_ms=1.0)
    b = Decision(turn=1, input="up", cost_usd=0.5, latency_ms=99.0)
    assert link_hash("x", a) == link_hash("x", b)
    assert link_hash("x", a) != link_hash("x", a.model_copy(update={"cost_usd": 0.25}))


def test_reordering_decisions_changes_the_head() -> None:
    a = Decision(turn=1, input="up", cost_usd=0.0, latency_ms=1.0)
    b = Decision(turn=1, input="down", cost_usd=0.0, latency_ms=1.0)
    assert link_hash(link_hash("x", a), b) != link_hash(link_hash("x", b), a)


@pytest.mark.parametrize(
    "fields",
    [
        {"input": ""},
        {"input": "x" * (MAX_INPUT_BYTES + 1)},
        {"cost_usd": -1.0},
        {"cost_usd": math.nan},
        {"latency_ms": math.inf},
        {"turn": 0},
    ],
)
def test_decision_bounds(fields: dict[str, object]) -> None:
    base: dict[str, object] = {"turn": 1, "input": "up", "cost_usd": 0.0, "latency_ms": 0.0}
    with pytest.raises(ValidationError):
        Decision.model_validate({**base, **fields})


@given(
    st.integers(1, 2**40),
    st.text(min_size=1, max_size=30),
    st.none() | st.floats(min_value=0, allow_nan=False, allow_infinity=False),
    st.floats(min_value=0, allow_nan=False, allow_infinity=False),
)
def test_fast_canonical_decision_equals_rfc8785(
    turn: int, word: str, cost: float | None, latency: float
) -> None:
    from playproof.core.canonical import canonical_json

    decision = Decision.model_construct(turn=turn, input=word, cost_usd=cost, latency_ms=latency)
    try:
        expected = canonical_json({"turn": turn, "input": word, "cost_usd": cost})
    except Exception:  # values with no canonical form (lone surrogates, huge integral floats)
        return
    assert decision.canonical() == expected


TRICKY = 'a"\\\n\x01\u2028\u00e9'


@pytest.mark.parametrize("value", [0.0, 1e-7, 1.5e-5, 1e16, 1e21, 1e22, 123.456, 2.0**53, 5e-324])
def test_number_edge_cases_match_rfc8785(value: float) -> None:
    from playproof.core.canonical import canonical_json

    decision = Decision.model_construct(turn=1, input=TRICKY, cost_usd=value, latency_ms=value)
    try:
        expected = canonical_json({"turn": 1, "input": TRICKY, "cost_usd": value})
    except Exception:
        pytest.skip("no canonical form")
    assert decision.canonical() == expected


@given(
    st.lists(
        st.tuples(
            st.integers(1, 2**40),
            st.sampled_from(["up", "down", 'q"\\\n\u00e9']) | st.text(min_size=1, max_size=8),
            st.none() | st.sampled_from([0.0, 0.5]) | st.floats(min_value=0, max_value=1e300),
        ),
        max_size=20,
    )
)
def test_chain_linker_equals_link_hash(raw: list[tuple[int, str, float | None]]) -> None:
    from playproof.core.chain import ChainLinker, canonical_decision

    start = genesis_hash("g", "0" * 64, "1" * 64, seed=3)
    linker = ChainLinker(start)
    head = start
    for turn, word, cost in raw:
        try:
            head = link_hash(head, canonical_decision(turn, word, cost))
        except UnicodeEncodeError:  # lone surrogates: no decision carries them
            return
        assert linker.link(turn, word, cost) == head == linker.head


@given(
    st.text(min_size=1, max_size=12),
    st.text(max_size=70),
    st.text(max_size=70),
    st.integers(-(2**53) + 1, 2**53 - 1),
)
def test_fast_genesis_equals_the_canonical_digest(
    game: str, build: str, contract: str, seed: int
) -> None:
    from playproof.core.canonical import digest

    fields = {"schema": "playproof/chain/v1", "game": game, "build": build, "contract": contract}
    try:
        expected = digest({**fields, "seed": seed})
    except Exception:  # lone surrogates have no canonical form
        return
    assert genesis_hash(game, build, contract, seed=seed) == expected


@pytest.mark.parametrize(
    ("text", "valid"),
    [
        ("\U0001f600" * (MAX_INPUT_BYTES // 4), True),  # exactly the bound in 4-byte characters
        ("\U0001f600" * (MAX_INPUT_BYTES // 4) + "x", False),
        ("\u00e9" * (MAX_INPUT_BYTES // 2), True),
        ("\u00e9" * (MAX_INPUT_BYTES // 2 + 1), False),
        ("x" * MAX_INPUT_BYTES, True),
    ],
)
def test_input_bound_counts_utf8_bytes(text: str, valid: bool) -> None:
    fields = {"turn": 1, "input": text, "cost_usd": 0.0, "latency_ms": 0.0}
    if valid:
        assert Decision.model_validate(fields).input == text
    else:
        with pytest.raises(ValidationError, match="bytes"):
            Decision.model_validate(fields)


@given(
    st.integers(1, 2**40),
    st.lists(
        st.tuples(
            st.sampled_from(["up", "down", 'q"\\\n\u00e9']) | st.text(min_size=1, max_size=8),
            st.none() | st.sampled_from([0.0, 0.5]) | st.floats(min_value=0, max_value=1e300),
        ),
        max_size=30,
    ),
    st.integers(0, 30),
)
def test_chain_linker_extend_equals_linking_one_by_one(
    first: int, raw: list[tuple[str, float | None]], split: int
) -> None:
    from playproof.core.chain import ChainLinker

    start = genesis_hash("g", "0" * 64, "1" * 64, seed=3)
    words, costs = [w for w, _ in raw], [c for _, c in raw]
    one, batch = ChainLinker(start), ChainLinker(start)
    try:
        for turn, (word, cost) in enumerate(raw, start=first):
            one.link(turn, word, cost)
    except UnicodeEncodeError:  # lone surrogates: no decision carries them
        return
    split = min(split, len(raw))
    batch.extend(first, words[:split], costs[:split])
    assert batch.extend(first + split, words[split:], costs[split:]) == one.head == batch.head


@given(
    st.lists(
        st.tuples(
            st.sampled_from(["up", "down", "left"]),
            st.sampled_from([None, 0.0, -0.0, 0.5, 1e21, 3, 3.0, 2**53 - 1]),
        ),
        max_size=40,
    ),
    st.booleans(),
)
def test_chain_linker_extend_across_chunks_and_cost_kinds_equals_linking_one_by_one(
    raw: list[tuple[str, float | None]], one_cost: bool
) -> None:
    """Chunks of three: every chunk boundary, constant-cost chunks (keyed by word),
    mixed ones (keyed by word and cost) and chunks with integer costs (not memoized)."""
    from playproof.core import chain as chain_module

    if one_cost and raw:
        raw = [(word, raw[0][1]) for word, _ in raw]
    start = genesis_hash("g", "0" * 64, "1" * 64, seed=5)
    one = chain_module.ChainLinker(start)
    for turn, (word, cost) in enumerate(raw, start=7):
        one.link(turn, word, cost)
    words, costs = [w for w, _ in raw], [c for _, c in raw]
    chunked = chain_module.ChainLinker(start)
    original = chain_module._LINK_CHUNK
    chain_module._LINK_CHUNK = 3
    try:
        assert chunked.extend(7, words, costs) == one.head
    finally:
        chain_module._LINK_CHUNK = original
    assert chain_module.ChainLinker(start).extend(7, words, costs) == one.head


def test_chain_linker_extend_refuses_columns_of_different_lengths() -> None:
    from playproof.core.chain import ChainLinker

    with pytest.raises(ValueError, match="2 inputs but 1 costs"):
        ChainLinker("0" * 64).extend(1, ["a", "b"], [0.0])


class _CheckedInPython(BaseModel):
    """The decision model as it was checked before: a Python validator per field."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    turn: Annotated[int, Field(ge=1)]
    input: Annotated[str, Field(min_length=1)]
    cost_usd: Annotated[float, Field(ge=0)] | None
    latency_ms: Annotated[float, Field(ge=0)]

    @field_validator("input")
    @classmethod
    def _bounded_input(cls, value: str) -> str:
        if len(value.encode("utf-8")) > MAX_INPUT_BYTES:
            raise ValueError(f"input is over {MAX_INPUT_BYTES} bytes")
        return value

    @field_validator("cost_usd", "latency_ms")
    @classmethod
    def _finite(cls, value: float | None) -> float | None:
        if value is not None and not math.isfinite(value):
            raise ValueError("must be finite")
        return value


def _outcome(model: type[BaseModel], fields: dict[str, Any], strict: bool) -> Any:
    """The validated fields, or the class of the error and the fields it names."""
    try:
        return model.model_validate(fields, strict=strict).model_dump()
    except ValidationError as exc:
        return ValidationError, sorted(str(e["loc"][0]) for e in exc.errors())


HOSTILE_NUMBERS = [
    math.nan,
    math.inf,
    -math.inf,
    -1.0,
    -5e-324,
    -0.0,
    0.0,
    5e-324,
    1.5,
    1e308,
    None,
    "1.0",
    True,
    3,
]
LONG = MAX_INPUT_BYTES // 4
HOSTILE_INPUTS = [
    "",
    "x",
    "x" * LONG,
    "x" * (LONG + 1),
    "x" * MAX_INPUT_BYTES,
    "x" * (MAX_INPUT_BYTES + 1),
    "\U0001f600" * (LONG - 1) + "ab",
    "\U0001f600" * LONG,
    "\U0001f600" * LONG + "x",
    "\u00e9" * (MAX_INPUT_BYTES // 2),
    "\u00e9" * (MAX_INPUT_BYTES // 2 + 1),
    "\ud800",
    "a\udfffb" * (LONG // 2),
    b"up",
    7,
    None,
]


@pytest.mark.parametrize("strict", [True, False])
@pytest.mark.parametrize("word", HOSTILE_INPUTS, ids=lambda w: f"{type(w).__name__}{len(str(w))}")
def test_native_input_check_decides_as_the_python_validator(word: Any, strict: bool) -> None:
    fields = {"turn": 1, "input": word, "cost_usd": 0.0, "latency_ms": 0.0}
    assert _outcome(Decision, fields, strict) == _outcome(_CheckedInPython, fields, strict)


@pytest.mark.parametrize("strict", [True, False])
@pytest.mark.parametrize("value", HOSTILE_NUMBERS, ids=repr)
def test_native_number_checks_decide_as_the_python_validators(value: Any, strict: bool) -> None:
    for name in ("cost_usd", "latency_ms"):
        fields = {"turn": 1, "input": "up", "cost_usd": 0.0, "latency_ms": 0.0, name: value}
        assert _outcome(Decision, fields, strict) == _outcome(_CheckedInPython, fields, strict)


@given(
    st.text(min_size=0, max_size=40) | st.sampled_from(HOSTILE_INPUTS[:13]),
    st.none() | st.floats() | st.integers(-3, 3),
    st.floats() | st.integers(-3, 3),
)
def test_decisions_are_refused_and_accepted_as_before(
    word: str, cost: float | None, latency: float
) -> None:
    fields = {"turn": 1, "input": word, "cost_usd": cost, "latency_ms": latency}
    for strict in (True, False):
        assert _outcome(Decision, fields, strict) == _outcome(_CheckedInPython, fields, strict)


def test_a_refused_input_names_the_bound_once() -> None:
    with pytest.raises(ValidationError) as caught:
        Decision.model_validate(
            {"turn": 1, "input": "\U0001f600" * (LONG + 1), "cost_usd": 0.0, "latency_ms": 0.0}
        )
    assert [e["msg"] for e in caught.value.errors()] == [
        f"input must be a non-empty string of at most {MAX_INPUT_BYTES} bytes in UTF-8"
    ]


@given(
    st.lists(
        st.text(max_size=6)
        | st.sampled_from(["x" * LONG, "x" * (LONG + 1), "\U0001f600" * LONG + "x"]),
        max_size=8,
    )
)
def test_first_too_large_equals_checking_every_word(words: list[str]) -> None:
    from playproof.core.chain import first_too_large, input_too_large

    expected = next((i for i, w in enumerate(words) if input_too_large(w)), None)
    assert first_too_large(words) == expected
    assert first_too_large(tuple(words)) == expected


@given(decisions, st.integers(0, 2**53 - 2))
def test_extend_over_columns_equals_folding_link_hash_over_decisions(
    raw: list[tuple[str, float | None, float]], seed: int
) -> None:
    from playproof.core.chain import ChainLinker

    start = genesis_hash("g", "0" * 64, "1" * 64, seed=seed)
    chain = build(raw)
    words, costs = [d.input for d in chain], [d.cost_usd for d in chain]
    assert ChainLinker(start).extend(1, words, costs) == chain_head(start, chain)
