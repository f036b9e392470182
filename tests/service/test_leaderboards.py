"""Leaderboards and challenges: who is listed, in what order, ties, pages; both databases."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from sqlalchemy import func, select, text

import playproof
from playproof.core.record import RunRecord
from playproof.errors import ServiceError
from playproof.service.leaderboards.models import Challenge
from playproof.service.leaderboards.services import (
    MAX_PAGE,
    add_challenge,
    challenge_leaderboard,
    leaderboard,
)
from playproof.service.log.models import LogLeaf
from playproof.service.log.services import as_utc
from playproof.service.owners.services import find_owner
from playproof.service.problems import Problem
from playproof.service.runs.models import Run
from playproof.sign import SigningKey

from .conftest import Service

CANONICAL = "benchmarked_canonical_template"
CUSTOMIZED = "benchmark_compatible_customized_instance"
TARGET = "native/2048"


def _run(service: Service, **fields: Any) -> str:
    """Store a finished run with the board columns given (and a log leaf unless logged=False)."""
    logged = fields.pop("logged", True)
    run_id = uuid.uuid4().hex
    values: dict[str, Any] = {
        "status": "verified",
        "trust_label": CANONICAL,
        "target_name": TARGET,
        "seed": 0,
        "budget_usd": None,
        "cost_usd": 0.0,
        "earned": 1,
        "earnable": 2,
        "decision_count": 10,
        **fields,
    }
    if "score_ratio" not in values:
        values["score_ratio"] = values["earned"] / values["earnable"]
    with service.sessions() as session:
        owner = session.scalar(select(func.min(Run.owner_id)))
        if owner is None:
            service.owner(f"o{uuid.uuid4().hex[:8]}")
            from playproof.service.owners.models import Owner

            owner = session.scalar(select(func.min(Owner.id)))
        session.add(
            Run(
                id=run_id,
                owner_id=owner,
                envelope_sha256=uuid.uuid4().hex * 2,
                envelope=b"{}",
                record_digest=uuid.uuid4().hex * 2,
                key_id="k",
                attempts=0,
                **values,
            )
        )
        session.flush()
        if logged:
            size = session.scalar(select(func.count()).select_from(LogLeaf)) or 0
            session.add(LogLeaf(leaf_index=size, run_id=run_id, record_digest="0" * 64))
        session.commit()
    return run_id


@pytest.fixture
def board(service: Service) -> Service:
    service.owner("alice")
    return service


def _ranks(service: Service, **options: Any) -> list[tuple[int, str]]:
    with service.sessions() as session:
        return [(r.rank, r.run_id) for r in leaderboard(session, TARGET, **options).rows]


def test_rank_by_score_then_cost_then_turns_with_ties(board: Service) -> None:
    best = _run(board, earned=2, earnable=2, cost_usd=5.0)
    cheap = _run(board, earned=1, earnable=2, cost_usd=0.5, decision_count=50)
    tie_a = _run(board, earned=1, earnable=2, cost_usd=1.0, decision_count=10)
    tie_b = _run(board, earned=2, earnable=4, cost_usd=1.0, decision_count=10)
    longer = _run(board, earned=1, earnable=2, cost_usd=1.0, decision_count=11)
    unmeasured = _run(board, earned=1, earnable=2, cost_usd=None, decision_count=1)
    worst = _run(board, earned=0, earnable=2, cost_usd=0.0)
    ranks = _ranks(board)
    assert ranks[0] == (1, best)
    assert ranks[1] == (2, cheap)
    assert {ranks[2], ranks[3]} == {(3, tie_a), (3, tie_b)}  # 1/2 and 2/4 tie
    assert ranks[4] == (5, longer)
    assert ranks[5] == (6, unmeasured)  # no measured cost: after every measured one
    assert ranks[6] == (7, worst)


def test_only_verified_logged_canonical_runs_of_the_target_are_listed(board: Service) -> None:
    listed = _run(board)
    _run(board, trust_label=CUSTOMIZED)
    _run(board, status="rejected", score_ratio=None, earned=None, earnable=None)
    _run(board, status="pending", score_ratio=None)
    _run(board, logged=False)
    _run(board, target_name="gym/cartpole")
    with board.sessions() as session:
        page = leaderboard(session, TARGET)
    assert [r.run_id for r in page.rows] == [listed]
    assert page.total == 1
    assert page.rows[0].proof_url == f"/api/v1/verifier/runs/{listed}"


def test_pages_follow_the_ranking(board: Service) -> None:
    made = [_run(board, earned=i, earnable=10) for i in range(7)]
    whole = [run_id for _, run_id in _ranks(board, limit=MAX_PAGE)]
    assert whole == list(reversed(made))
    paged = []
    for offset in range(0, 7, 3):
        with board.sessions() as session:
            page = leaderboard(session, TARGET, limit=3, offset=offset)
        assert page.total == 7
        paged += [r.run_id for r in page.rows]
        assert [r.rank for r in page.rows] == list(range(offset + 1, offset + 1 + len(page.rows)))
    assert paged == whole


def test_a_sort_orders_the_whole_board_before_it_is_cut_into_pages(board: Service) -> None:
    # Ranked by score, the runs' turns run backwards; sorted by turns, pages must continue.
    made = [_run(board, earned=i, earnable=10, decision_count=100 - i) for i in range(7)]
    made.append(_run(board, earned=0, earnable=10, decision_count=50, cost_usd=None))
    paged: list[str] = []
    for offset in range(0, 8, 3):
        with board.sessions() as session:
            page = leaderboard(session, TARGET, limit=3, offset=offset, sort="turns")
        paged += [r.run_id for r in page.rows]
    turns = {run_id: 100 - i for i, run_id in enumerate(made[:7])} | {made[7]: 50}
    assert paged == sorted(made, key=lambda run_id: turns[run_id])
    with board.sessions() as session:
        by_cost = [r.run_id for r in leaderboard(session, TARGET, limit=8, sort="cost").rows]
        ranks = {r.run_id: r.rank for r in leaderboard(session, TARGET, limit=8, sort="cost").rows}
    assert by_cost[-1] == made[7]  # unmeasured cost last, whatever its rank
    assert ranks[made[6]] == 1  # the rank column stays the ranking


@pytest.mark.parametrize(("limit", "offset"), [(0, 0), (MAX_PAGE + 1, 0), (10, -1)])
def test_page_bounds_are_refused(board: Service, limit: int, offset: int) -> None:
    with board.sessions() as session, pytest.raises(Problem) as refused:
        leaderboard(session, TARGET, limit=limit, offset=offset)
    assert refused.value.status == 422


def test_an_unknown_target_has_no_board(board: Service) -> None:
    with board.sessions() as session, pytest.raises(Problem) as refused:
        leaderboard(session, "native/nope")
    assert refused.value.status == 404


def test_a_challenge_counts_seed_budget_and_window(board: Service) -> None:
    now = datetime.now(UTC)
    with board.sessions() as session:
        challenge = add_challenge(
            session, TARGET, [1, 2, 3], 1.0, now - timedelta(hours=1), now + timedelta(hours=1)
        )
    counted = _run(board, seed=2, budget_usd=1.0)
    _run(board, seed=4, budget_usd=1.0)  # not one of the seeds
    _run(board, seed=1, budget_usd=1.5)  # a larger budget
    _run(board, seed=1, budget_usd=None)  # no budget at all
    _run(board, seed=3, budget_usd=0.5, created_at=now - timedelta(hours=2))  # too early
    _run(board, seed=3, budget_usd=0.5, created_at=now + timedelta(hours=2))  # too late
    _run(board, seed=3, budget_usd=0.5, trust_label=CUSTOMIZED)  # not public
    with board.sessions() as session:
        page = challenge_leaderboard(session, challenge.id)
    assert [r.run_id for r in page.rows] == [counted]


@pytest.mark.parametrize(
    "change",
    [
        {"target": "native/nope"},
        {"seeds": []},
        {"budget_usd": -1.0},
        {"budget_usd": float("nan")},
        {"closes_at": datetime(2020, 1, 1, tzinfo=UTC)},
    ],
)
def test_a_bad_challenge_is_refused(board: Service, change: dict[str, Any]) -> None:
    now = datetime.now(UTC)
    terms: dict[str, Any] = {
        "target": TARGET,
        "seeds": [1],
        "budget_usd": 1.0,
        "opens_at": now,
        "closes_at": now + timedelta(days=1),
        **change,
    }
    with board.sessions() as session, pytest.raises(ServiceError):
        add_challenge(session, **terms)


def test_the_board_over_http_lists_a_real_verified_run_and_links_its_proof(
    service: Service, signer: SigningKey, signed_2048: bytes, record_2048: RunRecord
) -> None:
    token = service.owner("alice", (signer.verifying_key,))
    run_id = service.upload(signed_2048, token).json()["id"]
    assert service.verdict(run_id)["status"] == "verified"
    board = service.client.get("/api/v1/leaderboards/native/2048").json()
    assert board["total"] == 1
    row = board["rows"][0]
    local = playproof.verify_signed(signed_2048, signer.verifying_key).score
    assert local is not None
    assert row["run_id"] == run_id
    assert row["rank"] == 1
    assert (row["earned"], row["earnable"]) == (local.earned, local.earnable)
    assert row["turns"] == len(record_2048.decisions)
    assert row["seed"] == record_2048.seed
    assert service.client.get(row["proof_url"]).status_code == 200
    page = service.client.get("/api/v1/leaderboards/native/2048?limit=1&offset=1").json()
    assert page["rows"] == []
    assert page["total"] == 1


def test_a_challenge_added_by_an_admin_over_http(service: Service) -> None:
    admin = service.owner("root")
    plain = service.owner("bob")
    with service.sessions() as session:
        find_owner(session, "root").admin = True
        session.commit()
    now = datetime.now(UTC)
    body = {
        "target": TARGET,
        "seeds": [3, 1, 1],
        "budget_usd": 2.0,
        "opens_at": now.isoformat(),
        "closes_at": (now + timedelta(days=1)).isoformat(),
    }
    auth = {"Authorization": f"Bearer {plain}"}
    assert service.client.post("/api/v1/challenges", json=body, headers=auth).status_code == 403
    assert service.client.post("/api/v1/challenges", json=body).status_code == 401
    made = service.client.post(
        "/api/v1/challenges", json=body, headers={"Authorization": f"Bearer {admin}"}
    )
    assert made.status_code == 201, made.text
    document = made.json()
    assert document["seeds"] == [1, 3]
    assert service.client.get(f"/api/v1/challenges/{document['id']}").json() == document
    board = service.client.get(document["leaderboard_url"]).json()
    assert board["challenge_id"] == document["id"]
    assert board["rows"] == []


def test_a_challenge_window_in_another_zone_is_the_same_instants(service: Service) -> None:
    """On SQLite a window posted at +05:00 was stored as its wall clock, five hours late."""
    admin = service.owner("root")
    with service.sessions() as session:
        find_owner(session, "root").admin = True
        session.commit()
    plus5 = timezone(timedelta(hours=5))
    closes = (datetime.now(UTC) - timedelta(hours=3)).astimezone(plus5)  # closed 3 hours ago
    body = {
        "target": TARGET,
        "seeds": [1],
        "budget_usd": 2.0,
        "opens_at": (closes - timedelta(days=1)).isoformat(),
        "closes_at": closes.isoformat(),
    }
    made = service.client.post(
        "/api/v1/challenges", json=body, headers={"Authorization": f"Bearer {admin}"}
    )
    assert made.status_code == 201, made.text
    stored = service.client.get(f"/api/v1/challenges/{made.json()['id']}").json()
    assert datetime.fromisoformat(stored["closes_at"]) == closes
    assert datetime.fromisoformat(stored["opens_at"]) == closes - timedelta(days=1)
    with service.sessions() as session:
        challenge = session.get(Challenge, made.json()["id"])
        assert challenge is not None
        assert as_utc(challenge.closes_at) == closes  # the stored instant, naive or not


AGENTS = [
    "openai:gpt-b",
    "baseline:Zed",
    "baseline:zed",
    "scripted:é",
    "baseline:a",
    "openai:gpt-b",
]
"""Agents whose order by code point differs from a locale's (capitals, an accent, a repeat)."""


def test_sort_by_agent_orders_the_whole_board_by_code_point_on_every_database(
    board: Service,
) -> None:
    if board.database_url.startswith("postgresql"):
        # A column in a locale's collation ("a" before "Z", "é" beside "e"), as a server
        # initialised in a non-C locale would give it: the board must still go by code point.
        with board.sessions() as session:
            session.execute(
                text('ALTER TABLE runs ALTER COLUMN agent TYPE varchar(769) COLLATE "und-x-icu"')
            )
            session.commit()
    made = {
        _run(board, agent=agent, earned=i, earnable=10, decision_count=10 + i): agent
        for i, agent in enumerate(AGENTS)
    }
    unnamed = _run(board, agent=None, earned=10, earnable=10)  # the best ranked, yet last
    paged: list[str] = []
    for offset in range(0, len(made) + 1, 2):
        with board.sessions() as session:
            page = leaderboard(session, TARGET, limit=2, offset=offset, sort="agent")
        assert page.total == len(made) + 1
        paged += [r.run_id for r in page.rows]
    assert paged[-1] == unnamed
    with board.sessions() as session:
        rows = {r.run_id: r for r in leaderboard(session, TARGET, limit=MAX_PAGE).rows}
    # By code point, then (a tie on the agent) the ranking: the better score first.
    expected = sorted(made, key=lambda run_id: (made[run_id], rows[run_id].rank))
    assert paged[:-1] == expected
    assert [rows[run_id].agent for run_id in paged] == [*sorted(AGENTS), None]
    assert rows[unnamed].rank == 1  # the rank column stays the ranking


def test_the_api_board_takes_a_sort_and_names_each_agent(board: Service) -> None:
    first = _run(board, agent="scripted:b", earned=2, earnable=2)
    second = _run(board, agent="baseline:c", earned=1, earnable=2)
    answer = board.client.get("/api/v1/leaderboards/native/2048", params={"sort": "agent"})
    assert answer.status_code == 200, answer.text
    rows = answer.json()["rows"]
    assert [(r["run_id"], r["agent"], r["rank"]) for r in rows] == [
        (second, "baseline:c", 2),
        (first, "scripted:b", 1),
    ]
    ranked = board.client.get("/api/v1/leaderboards/native/2048").json()["rows"]
    assert [r["run_id"] for r in ranked] == [first, second]
    refused = board.client.get("/api/v1/leaderboards/native/2048", params={"sort": "agent;x"})
    assert refused.status_code == 422


def test_the_api_challenge_board_takes_a_sort(board: Service) -> None:
    now = datetime.now(UTC)
    with board.sessions() as session:
        challenge = add_challenge(
            session, TARGET, [0], 1.0, now - timedelta(hours=1), now + timedelta(hours=1)
        )
    better = _run(board, agent="zz:top", budget_usd=1.0, earned=2, earnable=2)
    worse = _run(board, agent="aa:low", budget_usd=1.0, earned=1, earnable=2)
    path = f"/api/v1/challenges/{challenge.id}/leaderboard"
    by_agent = board.client.get(path, params={"sort": "agent"}).json()["rows"]
    assert [r["run_id"] for r in by_agent] == [worse, better]
    assert [r["run_id"] for r in board.client.get(path).json()["rows"]] == [better, worse]


def test_ingest_stores_the_agent_the_record_names(
    service: Service, signer: SigningKey, record_2048: RunRecord
) -> None:
    token = service.owner("alice", (signer.verifying_key,))
    answer = service.upload(playproof.sign_record(record_2048, signer).to_bytes(), token)
    assert answer.status_code == 202, answer.text
    with service.sessions() as session:
        stored = session.get(Run, answer.json()["id"])
        assert stored is not None
        assert stored.agent == f"{record_2048.actor.kind}:{record_2048.actor.id}"
