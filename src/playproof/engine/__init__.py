"""The decision loop: episodes and campaigns under declared budgets and turn limits."""

from playproof.engine._campaign import CampaignResult, run_campaign
from playproof.engine._episode import (
    DEFAULT_HISTORY,
    DEFAULT_MAX_TURNS,
    EpisodeConfig,
    TurnReport,
    check_mode,
    play,
)
from playproof.engine._guard import CampaignState
from playproof.engine._ledger import (
    LEDGER_SCHEMA,
    MAX_LEDGER_BYTES,
    Analysis,
    Ledger,
    LedgerSigner,
    LedgerVerifier,
    Recommendation,
    SegmentStatus,
    SignedLedger,
    Steer,
    load_ledger,
    save_ledger,
)
from playproof.engine._segments import (
    DEFAULT_RECENT,
    Analyst,
    SegmentReport,
    SteeringHook,
    TrajectoryStep,
)

__all__ = [
    "DEFAULT_HISTORY",
    "DEFAULT_MAX_TURNS",
    "DEFAULT_RECENT",
    "LEDGER_SCHEMA",
    "MAX_LEDGER_BYTES",
    "Analysis",
    "Analyst",
    "CampaignResult",
    "CampaignState",
    "EpisodeConfig",
    "Ledger",
    "LedgerSigner",
    "LedgerVerifier",
    "Recommendation",
    "SegmentReport",
    "SegmentStatus",
    "SignedLedger",
    "Steer",
    "SteeringHook",
    "TrajectoryStep",
    "TurnReport",
    "check_mode",
    "load_ledger",
    "play",
    "run_campaign",
    "save_ledger",
]
