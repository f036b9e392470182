"""The check groups the service publishes: ``replay_integrity`` and ``limits_and_accounting``."""

from __future__ import annotations

from collections.abc import Mapping

from playproof.checks import CheckGroup, CheckSpec, GroupResult, run_group
from playproof.core.record import DecisionLog, StopReason
from playproof.service.checks.evidence import StoredEvidence
from playproof.service.checks.policy import POLICY_GROUPS, decide_policy_group

__all__ = [
    "GROUPS",
    "LIMITS_AND_ACCOUNTING",
    "REPLAY_INTEGRITY",
    "decide_group",
    "decide_groups",
    "group_named",
    "is_group_name",
]

_SIGNATURE_STEPS = (
    ("envelope-well-formed", "the upload is a well-formed DSSE envelope"),
    ("signature-valid", "a key registered to the owner signed it"),
    ("statement-well-formed", "the payload is an in-toto statement of a run"),
    ("subjects-match", "the statement's subjects are the record's and the build's digests"),
    ("record-well-formed", "the signed record reads strictly as a run record"),
)
_REPLAY_STEPS = (
    ("decision-chain-intact", "every decision chains to the recorded head"),
    ("accounting-consistent", "the recorded totals are the sums of the decisions"),
    ("limits-respected", "play stayed within the declared limits"),
    ("target-pinned", "the build and the contract are the ones the record pins"),
    ("mode-supported", "the target's platform declares the record's verification mode"),
    ("claims-reproduced", "replay reproduced every claimed milestone"),
)


def _replay_specs() -> tuple[CheckSpec, ...]:
    specs = [
        CheckSpec(
            "report-stored",
            "the server's verification finished and its report is stored",
            "the server's verification has not finished",
        )
    ]
    previous = "report-stored"
    for check_id, meaning in _SIGNATURE_STEPS:
        specs.append(
            CheckSpec(
                check_id, meaning, f"the verifier refused: not so that {meaning}", (previous,)
            )
        )
        previous = check_id
    for check_id, meaning in _REPLAY_STEPS:
        specs.append(
            CheckSpec(
                check_id,
                meaning,
                f"the verifier refused: not so that {meaning}",
                ("record-well-formed",),
            )
        )
    return tuple(specs)


def _replay_integrity(evidence: StoredEvidence) -> Mapping[str, bool]:
    report = evidence.report
    if report is None:
        return {"report-stored": False}
    # A check the verifier did not run (it stops early on a bad signature) did not pass.
    decided: dict[str, bool] = {check.id: check.passed for check in report.checks}
    return {"report-stored": True, **decided}


REPLAY_INTEGRITY: CheckGroup[StoredEvidence] = CheckGroup(
    name="replay_integrity",
    # Mode-neutral: a trusted-recorder or platform-attested run is verified by the
    # server too, from its transcript or receipts, without being replayed.
    title="The server verified the signed record itself and the verifier's checks passed",
    checks=_replay_specs(),
    evaluate=_replay_integrity,
)


def _limits_and_accounting(evidence: StoredEvidence) -> Mapping[str, bool]:
    record = evidence.record
    if record is None:
        return {"record-readable": False}
    limits, decisions = record.limits, DecisionLog.of(record.decisions)
    # Summed left to right, as the recorder sums them: equal means equal. Over the
    # columns: building a model per decision cost most of a long run's proof.
    spent, unmeasured = 0.0, 0
    overrun = False
    budget = limits.budget_usd
    for cost in decisions.costs_usd:
        if budget is not None and (cost is None or spent >= budget):
            overrun = True
        if cost is None:
            unmeasured += 1
        else:
            spent += cost
    latency = 0.0
    # Not sum(): from Python 3.12 it adds floats with compensation, unlike the recorder.
    for one in decisions.latencies_ms:
        latency += one
    count = len(decisions)
    stop = record.stop_reason
    stop_ok = {
        StopReason.TURN_LIMIT: count == limits.max_turns,
        StopReason.BUDGET: limits.budget_usd is not None
        and record.accounting.spent_usd >= limits.budget_usd,
        StopReason.GAME_OVER: record.game_over,
    }.get(stop, True)
    return {
        "record-readable": True,
        "turns-within-limit": count <= limits.max_turns,
        "budget-not-overrun": not overrun,
        "costs-add-up": spent == record.accounting.spent_usd,
        "unmeasured-count-matches": unmeasured == record.accounting.unmeasured_decisions,
        "latencies-add-up": latency == record.accounting.total_latency_ms,
        "stop-reason-consistent": stop_ok,
    }


_NEEDS_RECORD = ("record-readable",)

LIMITS_AND_ACCOUNTING: CheckGroup[StoredEvidence] = CheckGroup(
    name="limits_and_accounting",
    title="The run kept its declared limits and its totals add up",
    checks=(
        CheckSpec(
            "record-readable",
            "the signed record is stored and reads as a run record",
            "the stored envelope holds no readable run record",
        ),
        CheckSpec(
            "turns-within-limit",
            "no more decisions than the declared turn limit",
            "more decisions than the declared turn limit",
            _NEEDS_RECORD,
        ),
        CheckSpec(
            "budget-not-overrun",
            "under a budget, every decision was priced and none came after the budget was spent",
            "under a budget, a decision was unpriced or came after the budget was spent",
            _NEEDS_RECORD,
        ),
        CheckSpec(
            "costs-add-up",
            "the recorded spend is the sum of the decisions' costs",
            "the recorded spend is not the sum of the decisions' costs",
            _NEEDS_RECORD,
        ),
        CheckSpec(
            "unmeasured-count-matches",
            "the count of unpriced decisions is right",
            "the count of unpriced decisions is wrong",
            _NEEDS_RECORD,
        ),
        CheckSpec(
            "latencies-add-up",
            "the recorded total latency is the sum of the decisions' latencies",
            "the recorded total latency is not the sum of the decisions' latencies",
            _NEEDS_RECORD,
        ),
        CheckSpec(
            "stop-reason-consistent",
            "the stop reason agrees with the limits and the counts",
            "the stop reason disagrees with the limits or the counts",
            _NEEDS_RECORD,
        ),
    ),
    evaluate=_limits_and_accounting,
)

GROUPS: tuple[CheckGroup[StoredEvidence], ...] = (REPLAY_INTEGRITY, LIMITS_AND_ACCOUNTING)
"""Every published group, in the order a proof document lists them."""


def group_named(name: str) -> CheckGroup[StoredEvidence] | None:
    """The group called ``name``, or None."""
    return next((g for g in GROUPS if g.name == name), None)


def decide_groups(evidence: StoredEvidence) -> list[GroupResult]:
    """Every group that applies to the run, decided: :data:`GROUPS`, then its policy groups.

    A run of a policy-bound target (``evidence.policy`` set) adds every policy
    group that applies to its target; any other run lists none of them.
    """
    results = [run_group(group, evidence) for group in GROUPS]
    policy = evidence.policy
    if policy is not None:
        results.extend(
            decide_policy_group(group, policy)
            for group in POLICY_GROUPS
            if policy.applies(group.name)
        )
    return results


def is_group_name(name: str) -> bool:
    """True when ``name`` is a group some run may have."""
    return group_named(name) is not None or any(g.name == name for g in POLICY_GROUPS)


def decide_group(name: str, evidence: StoredEvidence) -> GroupResult | None:
    """The group called ``name`` decided on ``evidence``; None when the run does not have it."""
    found = group_named(name)
    if found is not None:
        return run_group(found, evidence)
    policy = evidence.policy
    if policy is None or not policy.applies(name):
        return None
    group = next((g for g in POLICY_GROUPS if g.name == name), None)
    return decide_policy_group(group, policy) if group is not None else None
