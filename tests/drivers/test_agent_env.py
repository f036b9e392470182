"""An agent environment no process can carry is refused when the driver is made.

Before, it was accepted and surfaced as a bare ValueError from the process
start, at the first decision.
"""

from __future__ import annotations

import sys
from typing import Any

import pytest

from playproof.drivers import CliDriver, SessionDriver
from playproof.errors import DriverError

ARGV = [sys.executable, "-c", "pass"]


@pytest.mark.parametrize("make", [CliDriver, SessionDriver])
@pytest.mark.parametrize(
    ("env", "says"),
    [
        ({"AGENT\0MODE": "fast"}, "name 'AGENT\\x00MODE' holds a NUL byte"),
        ({"AGENT_MODE": "fa\0st"}, "value of AGENT_MODE holds a NUL byte"),
        ({"AGENT=MODE": "fast"}, "name 'AGENT=MODE' holds '='"),
        ({"": "fast"}, "a variable name is empty"),
        ({"AGENT_MODE": "\ud800"}, "value of AGENT_MODE cannot be encoded"),
        ({"AGENT_MODE": 3}, "value of AGENT_MODE is int, not text"),
    ],
)
def test_an_environment_no_process_can_carry_is_refused_at_construction(
    make: Any, env: dict[str, Any], says: str
) -> None:
    with pytest.raises(DriverError, match="agent environment") as refused:
        make(ARGV, env=env)
    assert says in str(refused.value)


@pytest.mark.parametrize("make", [CliDriver, SessionDriver])
def test_a_plain_environment_is_kept(make: Any) -> None:
    make(ARGV, env={"AGENT_MODE": "fast", "EMPTY": ""})
