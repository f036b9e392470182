"""Turn an ``--agent`` spec from the command line into a driver."""

from __future__ import annotations

import shlex
from collections.abc import Callable
from dataclasses import dataclass
from importlib import import_module
from pathlib import Path
from typing import Any, Literal

from playproof._provenance import public_agent, public_url
from playproof.core.agent import Driver
from playproof.core.baselines import baseline_names
from playproof.core.record import RunSettings
from playproof.drivers import (
    BaselineDriver,
    CallableDriver,
    CliDriver,
    OpenAIDriver,
    Pricing,
    ScriptedDriver,
    SessionDriver,
)
from playproof.errors import DriverError, TargetError
from playproof.targets import Target, read_input_script

__all__ = ["AGENT_HELP", "AgentChoice", "AgentOptions", "parse_agent", "run_settings"]

AGENT_HELP = (
    "reference | script:PATH | baseline:NAME (constant:WORD, unknown, round-robin, random-walk) "
    "| python:MODULE:FUNCTION | openai:MODEL | cli:'COMMAND ARGS' | session:'COMMAND ARGS'"
)


@dataclass(frozen=True)
class AgentOptions:
    """Command-line options that configure the model and program drivers."""

    cost_usd: float | None = None
    base_url: str | None = None
    api_key_env: str | None = None
    price_input: float | None = None
    price_cached_input: float | None = None
    price_output: float | None = None
    vision: bool = False
    reply: str = "json"
    timeout_s: float | None = None


def _pricing(options: AgentOptions) -> Pricing | None:
    if options.price_input is None and options.price_output is None:
        return None
    if options.price_input is None or options.price_output is None:
        raise DriverError("declare both --price-input and --price-output (USD per million tokens)")
    return Pricing(
        input_usd_per_mtok=options.price_input,
        output_usd_per_mtok=options.price_output,
        cached_input_usd_per_mtok=options.price_cached_input,
    )


def _argv(rest: str, kind: str) -> list[str]:
    try:
        argv = shlex.split(rest)
    except ValueError as exc:
        raise DriverError(f"cannot split the {kind} command {rest!r}: {exc}") from exc
    if not argv:
        raise DriverError(f"{kind}: needs a command, e.g. {kind}:'python agent.py'")
    return argv


def _reply_mode(reply: str) -> Literal["json", "word"]:
    if reply == "json":
        return "json"
    if reply == "word":
        return "word"
    raise DriverError(f"--reply must be json or word, not {reply!r}")


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
    spec: str, target: Target, *, seed: int = 0, options: AgentOptions | None = None
) -> AgentChoice:
    """Build the driver named by ``spec`` (see :data:`AGENT_HELP`)."""
    options = options or AgentOptions()
    cost_usd = options.cost_usd
    kind, _, rest = spec.partition(":")
    if spec == "reference":
        if not target.reference:
            raise TargetError(
                f"{target.name} has no reference inputs; play a script:PATH or another agent"
            )
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
    timeout: dict[str, Any] = {} if options.timeout_s is None else {"timeout_s": options.timeout_s}
    if kind == "openai":
        if not rest:
            raise DriverError("openai: needs a model name, e.g. openai:gpt-4o-mini")
        base: dict[str, Any] = {} if options.base_url is None else {"base_url": options.base_url}
        return AgentChoice(
            OpenAIDriver(
                rest,
                api_key_env=options.api_key_env,
                vision=options.vision,
                pricing=_pricing(options),
                **base,
                **timeout,
            )
        )
    if kind == "cli":
        return AgentChoice(
            CliDriver(
                _argv(rest, "cli"),
                reply=_reply_mode(options.reply),
                fixed_cost_usd=cost_usd,
                vision=options.vision,
                **timeout,
            )
        )
    if kind == "session":
        session_timeout: dict[str, Any] = (
            {} if options.timeout_s is None else {"decision_timeout_s": options.timeout_s}
        )
        return AgentChoice(
            SessionDriver(
                _argv(rest, "session"),
                fixed_cost_usd=cost_usd,
                vision=options.vision,
                **session_timeout,
            )
        )
    raise TargetError(f"unknown agent {spec!r}; use {AGENT_HELP}")


def run_settings(spec: str, options: AgentOptions) -> RunSettings:
    """What a record says about how the agent was configured: never a key or a header value.

    The API key's environment variable is not named, a command's arguments are
    left out and a base URL loses credentials and query (see
    :func:`playproof._provenance.public_agent`).
    """
    recorded: dict[str, str | int | float | bool | None] = {}
    if options.base_url is not None:
        recorded["base_url"] = public_url(options.base_url)
    for name, value in (
        ("cost_usd", options.cost_usd),
        ("price_input", options.price_input),
        ("price_cached_input", options.price_cached_input),
        ("price_output", options.price_output),
    ):
        if value is not None:
            recorded[name] = value
    kind = spec.partition(":")[0]
    if kind == "cli":
        recorded["reply"] = str(options.reply)
    return RunSettings(
        agent=public_agent(spec),
        vision=options.vision,
        agent_timeout_s=options.timeout_s,
        options=recorded,
    )
