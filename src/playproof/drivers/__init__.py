"""Agent drivers: turn an observation into one input and a measured cost."""

from playproof.core.agent import (
    NOOP,
    Action,
    DecisionContext,
    Driver,
    HistoryEntry,
    normalize_input,
)
from playproof.drivers.callable import CallableDriver
from playproof.drivers.scripted import BaselineDriver, ScriptedDriver

__all__ = [
    "NOOP",
    "Action",
    "BaselineDriver",
    "CallableDriver",
    "DecisionContext",
    "Driver",
    "HistoryEntry",
    "ScriptedDriver",
    "normalize_input",
]
