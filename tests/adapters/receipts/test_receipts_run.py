"""Platform-attested runs against loopback Steam and Xbox fakes, end to end.

The "game" is the toy counter; as the agent's inputs push the count up it
unlocks achievements and raises a stat on the fake provider, as a real game
would through the platform. The provider is read before and after the run;
verification recomputes the milestones from the pinned responses.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from receipts_fakes import (
    SCID,
    STEAM_APP,
    STEAM_USER,
    XBOX_TITLE,
    XBOX_USER,
    FakeProvider,
    fake_provider,
)
from toygame import ToyGame

from playproof import ScriptedDriver
from playproof.adapters.receipts import Credentials, arun_receipts, read_receipts_spec
from playproof.core.game import VerificationMode
from playproof.core.receipts import ReceiptsSpec
from playproof.core.record import RunRecord, parse_run_record
from playproof.engine import EpisodeConfig
from playproof.verify._receipts import attest_receipts

KEY = "SENTINEL-KEY-7f3a9c"


class UnlockingGame(ToyGame):
    """The counter; reaching 3 unlocks ACH_WIN (and 1 unlocks ACH_FIRST) on the provider."""

    def __init__(self, server: FakeProvider, names: dict[int, str]) -> None:
        super().__init__()
        self.server, self.names = server, names

    def step(self, word: str) -> None:
        super().step(word)
        with self.server.lock:
            for at, name in self.names.items():
                if self.count >= at:
                    self.server.state.achievements[name] = True
            if "kills" in self.server.state.stats:
                self.server.state.stats["kills"] = max(
                    int(self.server.state.stats["kills"]), self.count
                )


def steam_spec(server: FakeProvider, **extra: Any) -> ReceiptsSpec:
    data = {
        "schema": "playproof/receipts-target/v1",
        "name": "tf2-demo",
        "provider": "steam",
        "title_id": STEAM_APP,
        "play": "toy",
        "user_env": "STEAM_USER_ID",
        "key_env": "STEAM_API_KEY",
        "base_url": server.base_url,
        "game_name": "Team Fortress 2",
        "milestones": [
            {"id": "first", "achievement": "ACH_FIRST"},
            {"id": "win", "achievement": "ACH_WIN"},
            {"id": "kills-3", "stat": "kills", "at_least": 3},
        ],
        **extra,
    }
    return read_receipts_spec(json.dumps(data))


def xbox_spec(server: FakeProvider) -> ReceiptsSpec:
    return read_receipts_spec(
        json.dumps(
            {
                "name": "xbox-demo",
                "provider": "xbox",
                "title_id": XBOX_TITLE,
                "play": "toy",
                "user_env": "XBOX_XUID",
                "key_env": "XBOX_AUTH",
                "base_url": server.base_url,
                "service_config_id": SCID,
                "build": "1.0.0.0",
                "milestones": [
                    {"id": "one", "achievement": "1"},
                    {"id": "three", "achievement": "3"},
                    {"id": "five", "achievement": "5"},
                ],
            }
        )
    )


def play(spec: ReceiptsSpec, game: ToyGame, user: str, inputs: list[str]) -> RunRecord:
    config = EpisodeConfig(seed=0, max_turns=len(inputs), mode=VerificationMode.PLATFORM_ATTESTED)
    return asyncio.run(
        arun_receipts(
            spec, game, ScriptedDriver(inputs), config, credentials=Credentials(user, KEY)
        )
    )


def test_steam_run_earns_what_unlocked_during_the_run_and_verifies_clean() -> None:
    with fake_provider("steam") as server:
        server.state.achievements = {"ACH_FIRST": False, "ACH_WIN": False, "ACH_OTHER": False}
        server.state.stats = {"kills": 0, "accuracy": 0.5}
        game = UnlockingGame(server, {1: "ACH_FIRST", 3: "ACH_WIN"})
        record = play(steam_spec(server), game, STEAM_USER, ["inc", "inc", "inc", "wait"])
    assert {c.id for c in record.claimed} == {"first", "win", "kills-3"}
    assert all(c.turn == 4 for c in record.claimed)
    assert record.target.verification_mode is VerificationMode.PLATFORM_ATTESTED
    assert record.target.platform == "steam"
    receipts = record.receipts
    assert receipts is not None
    assert [(r.phase, r.endpoint) for r in receipts.responses] == [
        ("baseline", "steam-achievements"),
        ("baseline", "steam-stats"),
        ("final", "steam-achievements"),
        ("final", "steam-stats"),
    ]
    # The key went to the provider in the query, and is nowhere in the record.
    assert all(f"key={KEY}" in seen.target for seen in server.seen)
    assert KEY not in json.dumps(record.to_json())
    report = attest_receipts(record.to_json())
    assert report.clean, report.failed()
    assert sorted(report.verified) == ["first", "kills-3", "win"]
    assert report.trust is not None
    assert "Steam's Web API said so at" in report.trust
    assert "the game was not re-executed" in report.trust


def test_a_pre_unlocked_achievement_earns_nothing() -> None:
    with fake_provider("steam") as server:
        server.state.achievements = {"ACH_FIRST": True, "ACH_WIN": False}
        server.state.stats = {"kills": 5}
        game = UnlockingGame(server, {1: "ACH_FIRST", 3: "ACH_WIN"})
        record = play(steam_spec(server), game, STEAM_USER, ["inc", "inc", "inc"])
    assert [c.id for c in record.claimed] == ["win"]
    assert record.receipts is not None
    held = {j.id: (j.baseline, j.final, j.earned) for j in record.receipts.judged}
    assert held["first"] == (1, 1, False)
    assert held["kills-3"] == (5, 5, False)
    report = attest_receipts(record)
    assert report.clean
    assert report.verified == ["win"]
    intact = next(c for c in report.checks if c.id == "receipts-intact")
    assert "held before the run, so not earned: first, kills-3" in intact.reason


def test_xbox_run_follows_pages_and_verifies_clean() -> None:
    with fake_provider("xbox") as server:
        server.state.achievements = {str(i): False for i in range(1, 6)}
        server.state.achievements["1"] = True
        game = UnlockingGame(server, {2: "3"})
        record = play(xbox_spec(server), game, XBOX_USER, ["inc", "inc"])
    assert [c.id for c in record.claimed] == ["three"]
    receipts = record.receipts
    assert receipts is not None
    pages = [r.page for r in receipts.responses if r.phase == "final"]
    assert pages == [0, 1, 2]  # five achievements, two per page
    assert all(seen.headers.get("authorization") == KEY for seen in server.seen)
    assert all(seen.headers.get("x-xbl-contract-version") == "2" for seen in server.seen)
    report = attest_receipts(record)
    assert report.clean, report.failed()
    assert report.verified == ["three"]
    assert report.trust is not None
    assert report.trust.startswith("Xbox's REST API said so at")


def test_the_record_round_trips_through_its_json_form() -> None:
    with fake_provider("steam") as server:
        server.state.achievements = {"ACH_FIRST": False, "ACH_WIN": False}
        server.state.stats = {"kills": 0}
        record = play(steam_spec(server), UnlockingGame(server, {}), STEAM_USER, ["wait"])
    again = parse_run_record(json.dumps(record.to_json()))
    assert again == record
    assert again.claimed == ()


@pytest.mark.parametrize("mode", [VerificationMode.REPLAY, VerificationMode.TRUSTED_RECORDER])
def test_a_receipts_run_is_platform_attested_only(mode: VerificationMode) -> None:
    from playproof.errors import ReceiptError

    with fake_provider("steam") as server:
        server.state.achievements = {"ACH_FIRST": False, "ACH_WIN": False}
        config = EpisodeConfig(seed=0, max_turns=1, mode=mode)
        with pytest.raises(ReceiptError, match="platform-attested"):
            asyncio.run(
                arun_receipts(
                    steam_spec(server),
                    ToyGame(),
                    ScriptedDriver(["inc"]),
                    config,
                    credentials=Credentials(STEAM_USER, KEY),
                )
            )
        assert server.seen == []  # refused before the provider was asked anything
