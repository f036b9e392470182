"""The public namespaces export exactly the intended names (the API cannot drift by accident)."""

import importlib

import pytest

EXPECTED = {
    "playproof": {
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
        "NOOP",
        "Observation",
        "OpenAIDriver",
        "Platform",
        "Pricing",
        "RunRecord",
        "ScriptedDriver",
        "SegmentReport",
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
    },
    "playproof.engine": {
        "Analysis",
        "Analyst",
        "CampaignResult",
        "DEFAULT_HISTORY",
        "DEFAULT_MAX_TURNS",
        "DEFAULT_RECENT",
        "EpisodeConfig",
        "LEDGER_SCHEMA",
        "Ledger",
        "MAX_LEDGER_BYTES",
        "Recommendation",
        "SegmentReport",
        "SegmentStatus",
        "Steer",
        "SteeringHook",
        "TrajectoryStep",
        "TurnReport",
        "check_mode",
        "load_ledger",
        "play",
        "run_campaign",
        "save_ledger",
    },
    "playproof.verify": {
        "CHECK_IDS",
        "CheckResult",
        "VerificationReport",
        "attest",
        "parse_record",
    },
    "playproof.targets": {
        "ENTRY_POINT_GROUP",
        "Target",
        "TargetSpec",
        "get_target",
        "list_targets",
        "load_target_dir",
        "read_input_script",
    },
    "playproof.errors": {
        "CheckpointError",
        "ContractError",
        "CostError",
        "DriverError",
        "FormatError",
        "HookError",
        "InputError",
        "LedgerError",
        "ModeError",
        "NotSupportedError",
        "ObservationError",
        "PlayproofError",
        "RunCancelled",
        "RunError",
        "SigningKeyError",
        "TargetError",
        "WorkerCrashed",
        "WorkerError",
        "WorkerProtocolError",
        "WorkerStartError",
        "WorkerTimeout",
    },
}


@pytest.mark.parametrize("module", sorted(EXPECTED))
def test_exported_names(module: str) -> None:
    loaded = importlib.import_module(module)
    assert set(loaded.__all__) == EXPECTED[module]
    for name in loaded.__all__:
        assert hasattr(loaded, name), name


def test_every_error_derives_from_the_base() -> None:
    errors = importlib.import_module("playproof.errors")
    for name in errors.__all__:
        assert issubclass(getattr(errors, name), errors.PlayproofError)
