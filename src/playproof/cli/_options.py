"""Command-line options that `run` and `campaign` share, declared once."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from playproof.cli._agents import AGENT_HELP, AgentOptions
from playproof.core.game import VerificationMode

__all__ = [
    "AgentFlag",
    "AgentSeed",
    "ApiKeyEnv",
    "AgentTimeout",
    "BaseUrl",
    "Budget",
    "ContractFile",
    "Cost",
    "MaxTurns",
    "Mode",
    "Out",
    "PriceCachedInput",
    "PriceInput",
    "PriceOutput",
    "RecorderKey",
    "Reply",
    "ReplyMode",
    "Seed",
    "StopAtGameOver",
    "TargetName",
    "Vision",
    "Worker",
    "agent_options",
]

TargetName = Annotated[str, typer.Argument(help="Target name, e.g. native/2048.", metavar="TARGET")]
AgentFlag = Annotated[str, typer.Option("--agent", "-a", help=AGENT_HELP)]
Seed = Annotated[int | None, typer.Option(help="Game seed (default: the target's).")]
AgentSeed = Annotated[int, typer.Option(help="Seed of a random-walk baseline.")]
Budget = Annotated[float | None, typer.Option(help="Budget in USD (default: none).")]
MaxTurns = Annotated[int | None, typer.Option(help="Turn limit.")]
StopAtGameOver = Annotated[bool, typer.Option(help="End the run at game over.")]
Mode = Annotated[
    VerificationMode | None,
    typer.Option(help="Verification mode (default: the platform's first).", show_choices=True),
]
Worker = Annotated[
    bool | None, typer.Option("--worker/--in-process", help="Run the game in a child process.")
]
Cost = Annotated[
    float | None,
    typer.Option(help="Declared USD cost per decision of a python:, cli: or session: agent."),
]
BaseUrl = Annotated[str | None, typer.Option(help="openai: base URL of an OpenAI-compatible API.")]
ApiKeyEnv = Annotated[
    str | None, typer.Option(help="openai: NAME of the environment variable holding the key.")
]
PriceInput = Annotated[float | None, typer.Option(help="openai: USD per million input tokens.")]
PriceCachedInput = Annotated[
    float | None, typer.Option(help="openai: USD per million cached input tokens.")
]
PriceOutput = Annotated[float | None, typer.Option(help="openai: USD per million output tokens.")]
Vision = Annotated[
    bool, typer.Option(help="Send screen images to the agent when the target has them.")
]


class ReplyMode(StrEnum):
    """How a ``cli:`` agent answers: a JSON object, or a bare first word."""

    JSON = "json"
    WORD = "word"


Reply = Annotated[ReplyMode, typer.Option(help="cli: how the agent replies.")]
AgentTimeout = Annotated[
    float | None, typer.Option(help="Seconds an agent may take for one decision.")
]
Out = Annotated[Path | None, typer.Option(help="Where to write the signed record.")]
RecorderKey = Annotated[
    Path | None,
    typer.Option(
        help="trusted-recorder: private key (PEM) that signs the transcript "
        "(default: the key folder's signing key)."
    ),
]
ContractFile = Annotated[
    Path | None,
    typer.Option(
        "--contract",
        help="Contract file (JSON) to play or verify against; needed for ale:, gym:, retro: "
        "and gb: targets, and makes any target uncalibrated.",
    ),
]


def agent_options(
    *,
    cost: float | None,
    base_url: str | None,
    api_key_env: str | None,
    price_input: float | None,
    price_cached_input: float | None,
    price_output: float | None,
    vision: bool,
    reply: str,
    agent_timeout: float | None,
) -> AgentOptions:
    """The driver options gathered from the shared flags."""
    return AgentOptions(
        cost_usd=cost,
        base_url=base_url,
        api_key_env=api_key_env,
        price_input=price_input,
        price_cached_input=price_cached_input,
        price_output=price_output,
        vision=vision,
        reply=reply,
        timeout_s=agent_timeout,
    )
