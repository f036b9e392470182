"""The receipts readers and judge as pure functions, held to properties.

Any JSON at all fed to a provider reader ends in a reading or a
ReceiptError, never another exception; the judge earns a milestone exactly
when the baseline fell short of its threshold and the final reading meets it;
the verifier never raises on a record whose receipts are arbitrary JSON.
"""

from __future__ import annotations

import contextlib
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from playproof.core.receipts import ReceiptsSpec
from playproof.errors import ReceiptError
from playproof.verify._receipts import (
    Reading,
    attest_receipts,
    judge,
    parse_steam_achievements,
    parse_steam_stats,
    parse_xbox_page,
)

USER = "76561197960287930"

STEAM = ReceiptsSpec.model_validate(
    {
        "name": "s",
        "provider": "steam",
        "title_id": "440",
        "play": "toy",
        "user_env": "U",
        "key_env": "K",
        "milestones": [
            {"id": "a", "achievement": "A"},
            {"id": "k", "stat": "kills", "at_least": 3},
        ],
    }
)
XBOX = ReceiptsSpec.model_validate(
    {
        "name": "x",
        "provider": "xbox",
        "title_id": "17",
        "play": "toy",
        "user_env": "U",
        "key_env": "K",
        "milestones": [{"id": "a", "achievement": "1"}],
    }
)

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=20,
)


playerstats = st.fixed_dictionaries(
    {
        "playerstats": st.fixed_dictionaries(
            {
                "steamID": st.sampled_from([USER, "1", 5]),
                "success": st.sampled_from([True, False, "yes"]),
                "achievements": st.lists(
                    st.fixed_dictionaries(
                        {"apiname": st.sampled_from(["A", "B", ""]), "achieved": json_values}
                    ),
                    max_size=3,
                )
                | json_values,
                "stats": st.lists(
                    st.fixed_dictionaries(
                        {"name": st.sampled_from(["kills", "x"]), "value": json_values}
                    ),
                    max_size=3,
                )
                | json_values,
            }
        )
    }
)


@settings(max_examples=300, deadline=None)
@given(st.one_of(json_values, playerstats))
def test_readers_raise_only_receipt_errors(value: Any) -> None:
    body = json.dumps(value)
    for read in (
        lambda: parse_steam_achievements(body, STEAM, USER),
        lambda: parse_steam_stats(body, STEAM, USER),
        lambda: parse_xbox_page(body, XBOX),
    ):
        with contextlib.suppress(ReceiptError):
            read()


@settings(max_examples=300, deadline=None)
@given(
    achieved=st.tuples(st.integers(0, 1), st.integers(0, 1)),
    kills=st.tuples(st.none() | st.integers(-5, 10), st.integers(0, 10)),
)
def test_a_milestone_is_earned_exactly_when_it_was_crossed(
    achieved: tuple[int, int], kills: tuple[int | None, int]
) -> None:
    (a_then, a_now), (k_then, k_grow) = achieved, kills
    k_now = k_grow if k_then is None else k_then + k_grow
    names = frozenset({"achievement:A"})
    before = {"achievement:A": a_then} | ({} if k_then is None else {"stat:kills": k_then})
    after = {"achievement:A": a_now, "stat:kills": k_now}
    baseline = Reading(USER, "g", values=before, achievements=names)
    final = Reading(USER, "g", values=after, achievements=names)
    if a_now < a_then:
        with pytest.raises(ReceiptError, match="went backwards"):
            judge(STEAM, baseline, final)
        return
    judged = {j.id: j.earned for j in judge(STEAM, baseline, final)}
    assert judged["a"] == (a_then == 0 and a_now == 1)
    assert judged["k"] == ((k_then is None or k_then < 3) and k_now >= 3)


def test_a_stat_going_down_is_refused() -> None:
    names = frozenset({"achievement:A"})
    baseline = Reading(USER, "g", values={"achievement:A": 0, "stat:kills": 5}, achievements=names)
    final = Reading(USER, "g", values={"achievement:A": 0, "stat:kills": 4}, achievements=names)
    with pytest.raises(ReceiptError, match="stat 'kills' went backwards"):
        judge(STEAM, baseline, final)


@settings(max_examples=200, deadline=None)
@given(json_values)
def test_the_verifier_never_raises_on_arbitrary_receipts(receipts: Any) -> None:
    document = {
        "schema": "playproof/run/v2",
        "target": {
            "game_id": "s",
            "build_digest": "0" * 64,
            "contract_hash": "0" * 64,
            "platform": "steam",
            "verification_mode": "platform-attested",
        },
        "actor": {"kind": "scripted", "id": "x"},
        "seed": 0,
        "limits": {"budget_usd": None, "max_turns": 1, "stop_at_game_over": True},
        "decisions": {"inputs": [], "costs_usd": [], "latencies_ms": []},
        "chain_head": "0" * 64,
        "claimed": [],
        "milestones_total": 1,
        "accounting": {"spent_usd": 0, "unmeasured_decisions": 0, "total_latency_ms": 0},
        "stop_reason": "stopped",
        "game_over": False,
        "provenance": {"playproof": "0", "python": "3"},
        "started_at": "t",
        "finished_at": "t",
        "receipts": receipts,
    }
    assert attest_receipts(document).verdict == "rejected"
