"""playproof: verifiable, cost-aware benchmarks for any agent.

An agent plays a pinned target under a declared budget; the harness shows it
only what a player may see, privately records evidence, and anyone can later
recompute what it earned by replay and check an Ed25519 signature over exactly
what happened.
"""

from playproof._api import (
    acampaign,
    arun,
    campaign,
    resolve_target,
    run,
    verify_record,
    verify_signed,
)
from playproof.core.agent import NOOP, Action, DecisionContext, Driver, HistoryEntry
from playproof.core.contract import Contract, Milestone, parse_contract
from playproof.core.evidence import Evidence
from playproof.core.game import Game, GameDescriptor, Platform, VerificationMode
from playproof.core.observation import Image, Observation
from playproof.core.record import RunRecord, StopReason
from playproof.core.report import CheckResult, VerificationReport
from playproof.core.score import Score
from playproof.drivers import (
    BaselineDriver,
    CallableDriver,
    CliDriver,
    OpenAIDriver,
    Pricing,
    ScriptedDriver,
    SessionDriver,
)
from playproof.engine import (
    Analysis,
    CampaignResult,
    EpisodeConfig,
    Ledger,
    SegmentReport,
    Steer,
    TurnReport,
)
from playproof.sign import Envelope, SigningKey, VerifyingKey, sign_record, verify_envelope
from playproof.targets import Target, get_target, list_targets

__all__ = [
    "NOOP",
    "Action",
    "Analysis",
    "BaselineDriver",
    "CallableDriver",
    "CampaignResult",
    "CheckResult",
    "CliDriver",
    "Contract",
    "DecisionContext",
    "Driver",
    "Envelope",
    "EpisodeConfig",
    "Evidence",
    "Game",
    "GameDescriptor",
    "HistoryEntry",
    "Image",
    "Ledger",
    "Milestone",
    "Observation",
    "OpenAIDriver",
    "Platform",
    "Pricing",
    "RunRecord",
    "ScriptedDriver",
    "SegmentReport",
    "Score",
    "SessionDriver",
    "SigningKey",
    "Steer",
    "StopReason",
    "Target",
    "TurnReport",
    "VerificationMode",
    "VerificationReport",
    "VerifyingKey",
    "acampaign",
    "arun",
    "campaign",
    "get_target",
    "list_targets",
    "parse_contract",
    "resolve_target",
    "run",
    "sign_record",
    "verify_envelope",
    "verify_record",
    "verify_signed",
]
