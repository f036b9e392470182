import pytest
from hypothesis import given
from hypothesis import strategies as st

from playproof.policy.actions import ProposedAction, parse_action

symbols = st.from_regex(r"^[A-Z][A-Z0-9]{1,9}$", fullmatch=True)
amounts = st.integers(1, 10**12)


@given(symbols, symbols, amounts, st.integers(0, 10_000))
def test_well_formed_lines_parse_back(a: str, b: str, amount: int, bps: int) -> None:
    assert parse_action(f"swap {a} {b} {amount} {bps}") == ProposedAction("swap", a, b, amount, bps)
    assert parse_action(f"quote {a} {b} {amount}") == ProposedAction("quote", a, b, amount)


@given(st.text(max_size=300))
def test_any_text_parses_or_is_a_value_error(text: str) -> None:
    try:
        action = parse_action(text)
    except ValueError:
        return
    assert action.kind in {"quote", "swap", "wait", "finish"}


@pytest.mark.parametrize(
    "line",
    [
        "",
        "swap USDC JUP 100",
        "swap USDC JUP 0 100",
        "swap USDC JUP 01 100",
        "swap USDC JUP -5 100",
        "swap USDC JUP 100 10001",
        "swap usdc JUP 100 50",
        "quote USDC JUP 1e3",
        "wait 5",
        "finish now",
        "swap  USDC JUP 100 50",
        "x" * 300,
    ],
)
def test_malformed_lines_are_refused(line: str) -> None:
    with pytest.raises(ValueError, match=r"."):
        parse_action(line)


def test_an_authorization_suffix_is_kept_apart() -> None:
    action = parse_action("wait auth=3045")
    assert action == ProposedAction("wait", auth="3045")
    assert "auth" not in action.canonical(1, "localnet")
