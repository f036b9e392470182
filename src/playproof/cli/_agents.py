"""Turn an ``--agent`` spec from the command line into a driver."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from importlib import import_module
from pathlib import Path

from playproof.core.agent import Driver
from playproof.core.baselines import baseline_names
from playproof.drivers import BaselineDriver, CallableDriver, ScriptedDriver
from playproof.errors import TargetError
from playproof.targets import Target, read_input_script

__all__ = ["AGENT_HELP", "AgentChoice", "parse_agent"]

AGENT_HELP = (
    "reference | script:PATH | baseline:NAME (constant:WORD, unknown, round-robin, random-walk) "
    "| python:MODULE:FUNCTION"
)


@dataclass(frozen=True)
class AgentChoice:
    """A driver plus the turn cap its nature implies (a script has a fixed length)."""

    driver: Driver
    max_turns: int | None = None


def _python(spec: str, cost: float | None) -> Driver:
    module_name, _, attr = spec.partition(":")
    if not module_name or not attr:
        raise TargetError(f"python agent must look like python:MODULE:FUNCTION, not python:{spec}")
    try:
        fn: Callable[..., object] = getattr(import_module(module_name), attr)
    except (ImportError, AttributeError) as exc:
        raise TargetError(f"cannot load agent function {spec}: {exc}") from exc
    return CallableDriver(fn, name=spec, cost_usd=cost)


def parse_agent(
    spec: str, target: Target, *, seed: int = 0, cost_usd: float | None = None
) -> AgentChoice:
    """Build the driver named by ``spec`` (see :data:`AGENT_HELP`)."""
    kind, _, rest = spec.partition(":")
    if spec == "reference":
        return AgentChoice(
            ScriptedDriver(target.reference, name=f"{target.name}/reference"), len(target.reference)
        )
    if kind == "script":
        inputs = read_input_script(Path(rest))
        return AgentChoice(ScriptedDriver(inputs, name=Path(rest).name), len(inputs))
    if kind == "baseline":
        known = baseline_names(("WORD",))
        if rest not in known and not rest.startswith("constant:"):
            raise TargetError(f"unknown baseline {rest!r}; choose from {', '.join(known)}")
        return AgentChoice(BaselineDriver(rest, seed=seed))
    if kind == "python":
        return AgentChoice(_python(rest, cost_usd))
    raise TargetError(f"unknown agent {spec!r}; use {AGENT_HELP}")
