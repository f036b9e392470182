"""Agent drivers: turn an observation into one input and a measured cost."""

from playproof.core.agent import (
    NOOP,
    Action,
    DecisionContext,
    Driver,
    HistoryEntry,
    normalize_input,
)
from playproof.drivers._cost import Pricing
from playproof.drivers.callable import CallableDriver
from playproof.drivers.cli import CliDriver
from playproof.drivers.openai import OpenAIDriver
from playproof.drivers.scripted import BaselineDriver, ScriptedDriver
from playproof.drivers.session import SessionDriver

__all__ = [
    "NOOP",
    "Action",
    "BaselineDriver",
    "CallableDriver",
    "CliDriver",
    "DecisionContext",
    "Driver",
    "HistoryEntry",
    "OpenAIDriver",
    "Pricing",
    "ScriptedDriver",
    "SessionDriver",
    "normalize_input",
]
