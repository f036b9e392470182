import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from playproof.errors import FormatError, PolicyError
from playproof.policy import TEST_CHAINS, PolicyEnvelope, parse_envelope, require_test_chain
from playproof.policy.envelope import example_envelope
from playproof.schemas import render


def test_the_shipped_envelope_is_valid_and_local() -> None:
    envelope = parse_envelope(example_envelope())
    assert envelope.is_test_chain
    require_test_chain(envelope)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("max_slippage_bps", 501),
        ("max_slippage_bps", -1),
        ("max_iterations", 0),
        ("max_iterations", 201),
        ("invalid_attempt_limit", 11),
        ("max_slippage_bps", "100"),
        ("max_slippage_bps", 1.0),
        ("max_slippage_bps", True),
        ("allowed_tokens", []),
        ("allowed_tokens", ["USDC", "USDC"]),
        ("allowed_actions", ["quote", "borrow"]),
        ("authorization_key", "04" + "00" * 32),
        ("chain", "Mainnet"),
    ],
)
def test_bad_fields_are_refused_with_their_name(field: str, value: object) -> None:
    with pytest.raises(FormatError, match=field):
        parse_envelope({**example_envelope(), field: value})


def test_unknown_fields_are_refused() -> None:
    with pytest.raises(FormatError, match="max_leverage: Extra"):
        parse_envelope({**example_envelope(), "max_leverage": 3})


@given(st.from_regex(r"^[a-z][a-z0-9-]{0,31}$", fullmatch=True))
def test_every_chain_but_local_or_test_trips_the_mainnet_guard(chain: str) -> None:
    envelope = parse_envelope({**example_envelope(), "chain": chain})
    if chain in TEST_CHAINS:
        require_test_chain(envelope)
    else:
        with pytest.raises(PolicyError, match="mainnet guard"):
            require_test_chain(envelope)


def test_the_json_schema_describes_the_model() -> None:
    schema = json.loads(render("policy-envelope"))
    assert schema["additionalProperties"] is False
    assert set(schema["required"]) >= {"chain", "allowed_tokens", "max_slippage_bps"}
    assert schema["properties"]["max_slippage_bps"]["maximum"] == 500
    assert set(schema["properties"]) == {
        f.alias or name for name, f in PolicyEnvelope.model_fields.items()
    }
