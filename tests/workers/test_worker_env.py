"""A worker's environment that no process can carry is refused before any child starts."""

from __future__ import annotations

from typing import Any

import pytest

from playproof.errors import FormatError
from playproof.workers import WorkerGame, _client


@pytest.mark.parametrize(
    ("env", "says"),
    [
        ({"GAME\0MODE": "fast"}, "name 'GAME\\x00MODE' holds a NUL byte"),
        ({"GAME_MODE": "fa\0st"}, "value of GAME_MODE holds a NUL byte"),
        ({"GAME=MODE": "fast"}, "name 'GAME=MODE' holds '='"),
        ({"": "fast"}, "name is empty"),
        ({"GAME_MODE": "\ud800"}, "value of GAME_MODE cannot be encoded"),
    ],
)
def test_an_environment_no_process_can_carry_is_a_format_error(
    env: dict[str, str], says: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_child(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("a child was started for an environment that was refused")

    monkeypatch.setattr(_client, "ChildProcess", no_child)
    with pytest.raises(FormatError, match="worker environment") as refused:
        WorkerGame("toygames:make_toy", env=env)
    assert says in str(refused.value)


def test_a_name_or_value_that_is_not_text_is_a_format_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def no_child(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("a child was started for an environment that was refused")

    monkeypatch.setattr(_client, "ChildProcess", no_child)
    hostile: Any = {"GAME_MODE": 3}
    with pytest.raises(FormatError, match="value of GAME_MODE is int, not text"):
        WorkerGame("toygames:make_toy", env=hostile)
