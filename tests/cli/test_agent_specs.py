"""Agent specs from the command line: any text builds a driver or gives a typed error.

``--agent`` is typed by people and pasted from scripts; whatever it holds
(unknown kinds, empty commands, unbalanced quotes, control characters), the
parser answers a driver or a :class:`~playproof.errors.PlayproofError` the CLI
prints as one line, never another exception. And what a record says about
the agent (``run_settings``) never carries a command's arguments or a URL's
credentials.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from playproof.cli._agents import AgentChoice, AgentOptions, parse_agent, run_settings
from playproof.errors import PlayproofError
from playproof.targets import get_target

TARGET = get_target("native/2048")
KINDS = st.sampled_from(["", "baseline", "openai", "cli", "session", "reference", "nope", "x"])
TEXT = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=40) | st.sampled_from(
    ["'", '"', "'unbalanced", "a\\", "\x00", "constant:", "random-walk"]
)


@settings(max_examples=300, deadline=None)
@given(kind=KINDS, rest=TEXT, bare=st.booleans())
def test_any_spec_builds_a_driver_or_a_typed_error(kind: str, rest: str, bare: bool) -> None:
    spec = kind if bare else f"{kind}:{rest}"
    try:
        choice: AgentChoice | None = parse_agent(spec, TARGET)
    except PlayproofError as exc:
        choice, message = None, str(exc)
    else:
        message = "built"
    assert message  # an error says what is wrong
    assert choice is None or isinstance(choice, AgentChoice)


@settings(max_examples=200, deadline=None)
@given(secret=st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789", min_size=8, max_size=20))
def test_what_a_record_says_of_the_agent_keeps_no_argument_or_credential(secret: str) -> None:
    options = AgentOptions(base_url=f"https://user:{secret}@example.test/v1?key={secret}")
    for spec in (f"cli:agent --token {secret}", f"session:agent {secret}", "openai:model"):
        said = run_settings(spec, options).model_dump_json()
        assert secret not in said, spec
