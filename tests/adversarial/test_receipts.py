"""Hostile receipt sources and tampered receipts.

Every hostile reply of a loopback Steam or Xbox fake (huge, endless,
paginated forever, slow, malformed, about another user, title, service
config or build, a stat that goes backwards, an achievement that locks
again) ends the run in a ReceiptError and no record, with the planted
credential in no message and no log line. A record whose pinned responses,
judgement, claims or spec were altered is rejected by the verifier.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from receipts_fakes import (
    SCID,
    STEAM_APP,
    STEAM_USER,
    XBOX_TITLE,
    XBOX_USER,
    Behaviour,
    FakeProvider,
    complete,
    fake_provider,
    head,
    stream,
)
from toygame import ToyGame

from playproof import ScriptedDriver
from playproof.adapters.receipts import (
    Credentials,
    ReceiptsSource,
    arun_receipts,
    read_receipts_spec,
)
from playproof.core.canonical import sha256_hex
from playproof.core.game import VerificationMode
from playproof.core.receipts import MAX_RESPONSE_BYTES, ReceiptsSpec
from playproof.core.record import RunRecord
from playproof.engine import EpisodeConfig
from playproof.errors import FormatError, ReceiptError
from playproof.verify._receipts import attest_receipts

KEY = "SENTINEL-KEY-c0ffee-91"
TIMEOUT_S = 1.0
"""One request's bound in these tests (the default is 20 s)."""
DEADLINE_S = 3.0
"""One phase's bound in these tests (the default is 60 s)."""
DRIP_PAUSE_S = 0.05


def steam_spec(server: FakeProvider) -> ReceiptsSpec:
    return read_receipts_spec(
        json.dumps(
            {
                "name": "steam-hostile",
                "provider": "steam",
                "title_id": STEAM_APP,
                "play": "toy",
                "user_env": "STEAM_USER_ID",
                "key_env": "STEAM_API_KEY",
                "base_url": server.base_url,
                "game_name": "Team Fortress 2",
                "milestones": [
                    {"id": "win", "achievement": "ACH_WIN"},
                    {"id": "kills-3", "stat": "kills", "at_least": 3},
                ],
            }
        )
    )


def xbox_spec(server: FakeProvider) -> ReceiptsSpec:
    return read_receipts_spec(
        json.dumps(
            {
                "name": "xbox-hostile",
                "provider": "xbox",
                "title_id": XBOX_TITLE,
                "play": "toy",
                "user_env": "XBOX_XUID",
                "key_env": "XBOX_AUTH",
                "base_url": server.base_url,
                "service_config_id": SCID,
                "build": "1.0.0.0",
                "milestones": [{"id": "one", "achievement": "1"}],
            }
        )
    )


class SteppingGame(ToyGame):
    """The counter, calling ``on_step(server)`` after each input (as a game acts on a platform)."""

    def __init__(self, server: FakeProvider, on_step: Callable[[FakeProvider], None]) -> None:
        super().__init__()
        self.server, self.on_step = server, on_step

    def step(self, word: str) -> None:
        super().step(word)
        with self.server.lock:
            self.on_step(self.server)


def run(
    server: FakeProvider,
    spec: ReceiptsSpec,
    game: ToyGame | None = None,
    turns: int = 2,
    *,
    timeout_s: float = TIMEOUT_S,
    deadline_s: float = DEADLINE_S,
) -> RunRecord:
    user = STEAM_USER if spec.provider == "steam" else XBOX_USER
    credentials = Credentials(user, KEY)
    source = ReceiptsSource(spec, credentials, timeout_s=timeout_s, deadline_s=deadline_s)

    async def go() -> RunRecord:
        try:
            return await arun_receipts(
                spec,
                game or ToyGame(),
                ScriptedDriver(["inc"] * turns),
                EpisodeConfig(seed=0, max_turns=turns, mode=VerificationMode.PLATFORM_ATTESTED),
                credentials=credentials,
                source=source,
            )
        finally:
            await source.aclose()

    return asyncio.run(go())


def steam_server(server: FakeProvider) -> None:
    server.state.achievements = {"ACH_WIN": False, "ACH_OTHER": True}
    server.state.stats = {"kills": 1}


def xbox_server(server: FakeProvider) -> None:
    server.state.achievements = {str(i): False for i in range(1, 6)}


CHUNK = b"4000\r\n" + b"x" * 0x4000 + b"\r\n"
NEST = 30_000

RAW: dict[str, tuple[Behaviour, str]] = {
    "declared over the bound": (
        stream(head("200 OK", f"content-length: {10 * MAX_RESPONSE_BYTES}"), b"x" * 4096),
        "over the",
    ),
    "undeclared over the bound": (stream(head("200 OK", "connection: close"), b"x" * 4096), "over"),
    "chunked and endless": (stream(head("200 OK", "transfer-encoding: chunked"), CHUNK), "over"),
    "a slow drip": (
        stream(head("200 OK", "content-length: 1000"), b" ", DRIP_PAUSE_S),
        "no complete reply",
    ),
    "endless headers": (
        stream(b"HTTP/1.1 200 OK\r\n", b"x-padding: " + b"y" * 1000 + b"\r\n"),
        "request failed",
    ),
    "malformed JSON": (complete(b'{"playerstats": {"steamID": "1"'), "not valid JSON"),
    "a JSON list": (complete(b"[1, 2]"), "not a JSON object"),
    "deeply nested": (complete(b"[" * NEST + b"]" * NEST), "JSON"),
    "invalid UTF-8": (complete(b'{"playerstats": "\xff\xfe"}'), "not UTF-8"),
    "HTTP 403": (complete(b"{}", "403 Forbidden"), "HTTP 403"),
    "a redirect": (complete(b"", "302 Found"), "HTTP 302"),
    "a compressed reply": (
        lambda sock, stop: sock.sendall(
            head("200 OK", "content-encoding: gzip", "content-length: 2") + b"{}"
        ),
        "compressed",
    ),
    "the key echoed back": (
        complete(json.dumps({"playerstats": {"error": f"bad key {KEY}"}}).encode()),
        "repeats the credential",
    ),
    "Steam's error shape": (
        complete(b'{"playerstats": {"error": "Requested app has no stats", "success": false}}'),
        "answered with an error",
    ),
}
"""Raw replies that replace one provider reply, and words the error must hold."""


def _no_key_anywhere(text: str, caplog: pytest.LogCaptureFixture) -> None:
    assert KEY not in text
    assert all(KEY not in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize("phase_request", [0, 2], ids=["baseline", "final"])
@pytest.mark.parametrize("name", sorted(RAW))
def test_a_hostile_steam_reply_ends_the_run_without_a_record(
    name: str, phase_request: int, caplog: pytest.LogCaptureFixture
) -> None:
    behaviour, words = RAW[name]
    caplog.set_level(logging.DEBUG)
    with fake_provider("steam") as server:
        steam_server(server)
        server.hostile[phase_request] = behaviour
        with pytest.raises(ReceiptError, match=words) as caught:
            run(server, steam_spec(server))
    _no_key_anywhere(str(caught.value), caplog)


def test_an_unreachable_provider_is_a_typed_error_without_the_key(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    with fake_provider("steam") as server:
        spec = steam_spec(server)
    with pytest.raises(ReceiptError, match="request failed") as caught:
        run(server, spec)  # the server is gone: connection refused
    _no_key_anywhere(str(caught.value), caplog)


def _set(path: str, value: Any) -> Callable[[FakeProvider], None]:
    def change(server: FakeProvider) -> None:
        setattr(server.state, path, value)

    return change


DURING_STEAM: dict[str, tuple[Callable[[FakeProvider], None], str]] = {
    "a stat going backwards": (lambda s: s.state.stats.update(kills=0), "went backwards"),
    "a stat vanishing": (lambda s: s.state.stats.pop("kills", None), "went backwards"),
    "an achievement locking again": (
        lambda s: s.state.achievements.update(ACH_OTHER=False),
        "went backwards",
    ),
    "an achievement appearing": (
        lambda s: s.state.achievements.update(ACH_NEW=False),
        "different achievements",
    ),
    "another user": (_set("user", "76561197960287931"), "another user"),
    "another game": (_set("game_name", "Dota 2"), "another game"),
}
"""Changes the game makes on the provider while it is played, and words the error must hold."""


@pytest.mark.parametrize("name", sorted(DURING_STEAM))
def test_a_steam_reading_that_disagrees_ends_the_run(name: str) -> None:
    change, words = DURING_STEAM[name]
    with fake_provider("steam") as server:
        steam_server(server)
        with pytest.raises(ReceiptError, match=words):
            run(server, steam_spec(server), SteppingGame(server, change))


def test_a_spec_achievement_the_provider_does_not_list_is_refused() -> None:
    with fake_provider("steam") as server:
        server.state.achievements = {"ACH_OTHER": False}
        server.state.stats = {"kills": 0}
        with pytest.raises(ReceiptError, match="lists no achievement 'ACH_WIN'"):
            run(server, steam_spec(server))


DURING_XBOX: dict[str, tuple[Callable[[FakeProvider], None], str]] = {
    "another title": (_set("title_id", "1234"), "not associated with title"),
    "another service config": (_set("scid", "00000000-1111"), "another service config"),
    "another build": (_set("version", "2.0.0.0"), "another build"),
    "pagination forever": (_set("endless_pages", True), "still has more pages"),
    "a total that does not add up": (_set("total_records", 9), "says 9 achievements"),
    "an achievement locking again": (
        lambda s: s.state.achievements.update({"2": False}),
        "went backwards",
    ),
}


@pytest.mark.parametrize("name", sorted(DURING_XBOX))
def test_an_xbox_reading_that_disagrees_ends_the_run(name: str) -> None:
    change, words = DURING_XBOX[name]
    with fake_provider("xbox") as server:
        xbox_server(server)
        server.state.achievements["2"] = True
        with pytest.raises(ReceiptError, match=words):
            run(server, xbox_spec(server), SteppingGame(server, change))


def test_a_repeated_continuation_token_is_refused() -> None:
    page = {
        "achievements": [],
        "pagingInfo": {"continuationToken": "again", "totalRecords": 0},
    }
    with fake_provider("xbox") as server:
        xbox_server(server)
        for index in range(8):
            server.hostile[index] = complete(json.dumps(page).encode())
        with pytest.raises(ReceiptError, match="repeats a continuation token"):
            run(server, xbox_spec(server))
        assert len(server.seen) == 2


def test_a_slow_phase_hits_its_deadline() -> None:
    # The request bound is generous; the phase bound (1 s) is what cuts the drip off.
    slow = stream(head("200 OK", "content-length: 100000"), b" ", DRIP_PAUSE_S)
    with fake_provider("xbox") as server:
        xbox_server(server)
        server.hostile[0] = slow
        with pytest.raises(ReceiptError, match="no complete reply within 1 s"):
            run(server, xbox_spec(server), timeout_s=60.0, deadline_s=1.0)


@pytest.mark.parametrize("provider", ["steam", "xbox"])
def test_a_clean_run_logs_nothing_holding_the_key(
    provider: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    with fake_provider(provider) as server:
        if provider == "steam":
            steam_server(server)
            spec = steam_spec(server)
        else:
            xbox_server(server)
            spec = xbox_spec(server)
        record = run(server, spec)
    assert KEY not in json.dumps(record.to_json())
    assert caplog.records  # the HTTP library did log; none of it holds the key
    _no_key_anywhere("", caplog)


def test_missing_credentials_are_a_typed_error() -> None:
    from playproof.adapters.receipts import credentials_from_env

    with fake_provider("steam") as server:
        spec = steam_spec(server)
    with pytest.raises(ReceiptError, match="set STEAM_USER_ID"):
        credentials_from_env(spec, {"STEAM_API_KEY": KEY})
    with pytest.raises(ReceiptError, match="set STEAM_API_KEY"):
        credentials_from_env(spec, {"STEAM_USER_ID": STEAM_USER})
    with pytest.raises(ReceiptError, match="set STEAM_USER_ID"):
        credentials_from_env(spec, {"STEAM_USER_ID": "../etc", "STEAM_API_KEY": KEY})
    # A short key could turn up in a reply by chance, and a reply repeating it is refused.
    with pytest.raises(ReceiptError, match="16 to 8192 printable characters"):
        credentials_from_env(spec, {"STEAM_USER_ID": STEAM_USER, "STEAM_API_KEY": "k"})
    with pytest.raises(ReceiptError, match="printable"):
        Credentials(STEAM_USER, KEY + "\n")


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"provider": "xbox", "milestones": [{"id": "k", "stat": "kills", "at_least": 1}]}, "Xbox"),
        ({"build": "1.0"}, "Steam's responses carry no"),
        ({"milestones": []}, "milestones"),
        ({"milestones": [{"id": "a", "achievement": "X", "stat": "Y", "at_least": 1}]}, "one of"),
        (
            {"milestones": [{"id": "a", "achievement": "X"}, {"id": "a", "achievement": "Z"}]},
            "twice",
        ),
        ({"base_url": "http://user:pw@example.com"}, "base_url"),
        ({"base_url": "http://example.com/?key=1"}, "base_url"),
        ({"user_env": "lower"}, "user_env"),
        ({"extra": 1}, "extra"),
    ],
)
def test_a_bad_spec_is_a_format_error(change: dict[str, Any], words: str) -> None:
    data: dict[str, Any] = {
        "name": "s",
        "provider": "steam",
        "title_id": "1",
        "play": "toy",
        "user_env": "U",
        "key_env": "K",
        "milestones": [{"id": "a", "achievement": "X"}],
    }
    with pytest.raises(FormatError, match=words):
        read_receipts_spec(json.dumps({**data, **change}))


# --- tampering with a recorded run ------------------------------------------------------


@pytest.fixture(scope="module")
def recorded() -> dict[str, Any]:
    def unlock(server: FakeProvider) -> None:
        server.state.achievements["ACH_WIN"] = True
        server.state.stats["kills"] = 4

    with fake_provider("steam") as server:
        steam_server(server)
        record = run(server, steam_spec(server), SteppingGame(server, unlock))
    assert [c.id for c in record.claimed] == ["win", "kills-3"]
    return record.to_json()


def _copy(document: dict[str, Any]) -> dict[str, Any]:
    copied: dict[str, Any] = json.loads(json.dumps(document))
    return copied


def _failed(document: dict[str, Any]) -> dict[str, str]:
    report = attest_receipts(document)
    assert report.verdict == "rejected"
    return {c.id: c.reason for c in report.checks if not c.passed}


def test_the_untouched_record_verifies_clean(recorded: dict[str, Any]) -> None:
    report = attest_receipts(recorded)
    assert report.clean, report.failed()


def test_a_tampered_pinned_response_is_rejected(recorded: dict[str, Any]) -> None:
    document = _copy(recorded)
    final = document["receipts"]["responses"][2]
    body = final["body"].replace('"achieved": 1', '"achieved": 0', 1)
    assert body != final["body"]
    final["body"] = body
    failed = _failed(document)
    assert (
        "do not match their digests: final steam-achievements page 0" in failed["receipts-intact"]
    )
    assert "claims-reproduced" in failed


def test_a_rewritten_response_with_a_fresh_digest_contradicts_the_judgement(
    recorded: dict[str, Any],
) -> None:
    document = _copy(recorded)
    baseline = document["receipts"]["responses"][0]
    # Pretend ACH_WIN was already unlocked before the run: the judgement no longer holds.
    body = baseline["body"].replace(
        '{"apiname": "ACH_WIN", "achieved": 0', '{"apiname": "ACH_WIN", "achieved": 1'
    )
    assert body != baseline["body"]
    baseline["body"], baseline["sha256"] = body, sha256_hex(body.encode())
    failed = _failed(document)
    assert "recorded judgement differs" in failed["receipts-intact"]
    assert "win was not reproduced by the pinned receipts" in failed["claims-reproduced"]


def test_a_claim_the_receipts_do_not_earn_is_rejected(recorded: dict[str, Any]) -> None:
    document = _copy(recorded)
    document["claimed"] = [document["claimed"][0]]
    document["claimed"].append({"id": "ghost", "turn": 2})
    failed = _failed(document)
    assert "ghost is not a milestone of the contract" in failed["claims-reproduced"]


def test_a_lowered_threshold_in_the_spec_breaks_the_pin(recorded: dict[str, Any]) -> None:
    document = _copy(recorded)
    document["receipts"]["spec"]["milestones"][1]["at_least"] = 1
    failed = _failed(document)
    assert "build digest" in failed["target-pinned"]


def test_a_request_for_another_user_is_rejected(recorded: dict[str, Any]) -> None:
    document = _copy(recorded)
    response = document["receipts"]["responses"][1]
    response["request"] = response["request"].replace(STEAM_USER, "76561197960287931")
    failed = _failed(document)
    assert "not for the spec's app id and user" in failed["receipts-intact"]


def test_a_dropped_response_is_rejected(recorded: dict[str, Any]) -> None:
    document = _copy(recorded)
    del document["receipts"]["responses"][3]
    failed = _failed(document)
    assert "pages missing" in failed["receipts-intact"]


def test_a_record_without_its_receipts_is_rejected(recorded: dict[str, Any]) -> None:
    document = _copy(recorded)
    del document["receipts"]
    assert attest_receipts(document).verdict == "rejected"


def test_a_signed_record_verifies_and_a_tampered_envelope_does_not(
    recorded: dict[str, Any],
) -> None:
    import base64

    from playproof import SigningKey, verify_signed
    from playproof.core.record import parse_run_record
    from playproof.sign import sign_record

    key = SigningKey.generate()
    envelope = sign_record(parse_run_record(recorded), key).to_json()
    report = verify_signed(json.dumps(envelope), [key.verifying_key])
    assert report.clean, report.failed()
    assert report.trust is not None
    assert "Steam's Web API said so" in report.trust
    payload = json.loads(base64.b64decode(envelope["payload"]))
    payload["predicate"]["receipts"]["judged"][0]["earned"] = False
    envelope["payload"] = base64.b64encode(json.dumps(payload).encode()).decode()
    assert verify_signed(json.dumps(envelope), [key.verifying_key]).verdict == "rejected"


def test_a_request_for_another_steam_method_is_rejected(recorded: dict[str, Any]) -> None:
    document = _copy(recorded)
    response = document["receipts"]["responses"][0]
    response["request"] = response["request"].replace("GetPlayerAchievements", "GetOwnedGames")
    failed = _failed(document)
    assert "asks another Steam method" in failed["receipts-intact"]


@pytest.fixture(scope="module")
def xbox_recorded() -> dict[str, Any]:
    with fake_provider("xbox") as server:
        xbox_server(server)
        record = run(server, xbox_spec(server), SteppingGame(server, _unlock_first))
    assert [c.id for c in record.claimed] == ["one"]
    return record.to_json()


def _unlock_first(server: FakeProvider) -> None:
    server.state.achievements["1"] = True


def _final_pages(document: dict[str, Any]) -> list[dict[str, Any]]:
    return [r for r in document["receipts"]["responses"] if r["phase"] == "final"]


def test_the_untouched_xbox_record_verifies_clean(xbox_recorded: dict[str, Any]) -> None:
    assert len(_final_pages(xbox_recorded)) == 3
    assert attest_receipts(xbox_recorded).clean


def test_a_dropped_xbox_page_is_rejected(xbox_recorded: dict[str, Any]) -> None:
    last = _copy(xbox_recorded)
    last["receipts"]["responses"].remove(_final_pages(last)[2])
    assert "the last pinned page still has a next page" in _failed(last)["receipts-intact"]
    middle = _copy(xbox_recorded)
    middle["receipts"]["responses"].remove(_final_pages(middle)[1])
    assert "pages missing or out of order" in _failed(middle)["receipts-intact"]


def test_a_page_that_does_not_continue_the_previous_is_rejected(
    xbox_recorded: dict[str, Any],
) -> None:
    document = _copy(xbox_recorded)
    page = _final_pages(document)[2]
    page["request"] = page["request"].replace("continuationToken=4", "continuationToken=2")
    assert "does not continue from the previous page" in _failed(document)["receipts-intact"]


def test_an_xbox_request_for_another_title_is_rejected(xbox_recorded: dict[str, Any]) -> None:
    document = _copy(xbox_recorded)
    page = _final_pages(document)[0]
    page["request"] = page["request"].replace(f"titleId={XBOX_TITLE}", "titleId=1")
    assert "not for the spec's title id" in _failed(document)["receipts-intact"]


# --- hostile requests and timestamps in a recorded run ------------------------------------


@pytest.mark.parametrize("which", ["steam", "xbox"])
def test_a_request_urlsplit_refuses_is_a_failed_check_not_a_crash(
    which: str, recorded: dict[str, Any], xbox_recorded: dict[str, Any]
) -> None:
    # urlsplit raises ValueError on an unclosed IPv6 bracket; the verifier used to pass it on
    # (and `playproof verify` printed "internal error").
    document = _copy(recorded if which == "steam" else xbox_recorded)
    document["receipts"]["responses"][0]["request"] = "//[x/users/xuid(1)/achievements?a=1"
    assert "is not a path and query" in _failed(document)["receipts-intact"]


def _set_times(document: dict[str, Any], received: list[str], baseline: str, final: str) -> None:
    receipts = document["receipts"]
    for response, stamp in zip(receipts["responses"], received, strict=True):
        response["received_at"] = stamp
    receipts["baseline_at"], receipts["final_at"] = baseline, final


BEFORE, AFTER = "2000-01-01T00:00:00.000Z", "2999-01-01T00:00:00.000Z"
TIMELINES: dict[str, tuple[Callable[[dict[str, Any]], None], str]] = {
    "final_at before baseline_at": (
        lambda d: d["receipts"].update(final_at=BEFORE),
        "final_at is not when the last final response was received",
    ),
    "a final reply received before the baseline": (
        lambda d: d["receipts"]["responses"][2].update(received_at=BEFORE),
        "not in the order they were received",
    ),
    "replies listed out of order": (
        lambda d: d["receipts"]["responses"].reverse(),
        "not in the order they were received",
    ),
    "a timestamp that is no time": (
        lambda d: d["receipts"].update(baseline_at="[red]yesterday"),
        "is not an ISO 8601 time",
    ),
    "a time without a zone": (
        lambda d: d["receipts"].update(baseline_at="2026-01-01T00:00:00"),
        "is not in UTC",
    ),
    "the whole timeline before the run": (
        lambda d: _set_times(d, [BEFORE] * 4, BEFORE, BEFORE),
        "the final reading began before the run finished",
    ),
    "the whole timeline after the run": (
        lambda d: _set_times(d, [AFTER] * 4, AFTER, AFTER),
        "the baseline was read after the run started",
    ),
}


@pytest.mark.parametrize("case", sorted(TIMELINES))
def test_receipts_whose_times_contradict_the_run_are_rejected(
    case: str, recorded: dict[str, Any]
) -> None:
    # Each of these verified clean before the timeline was checked.
    change, words = TIMELINES[case]
    document = _copy(recorded)
    change(document)
    assert words in _failed(document)["receipts-intact"]


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    index=st.integers(0, 3),
    field=st.sampled_from(["request", "received_at"]),
    text=st.text(min_size=1, max_size=60),
)
def test_any_request_or_time_text_gets_a_verdict(
    recorded: dict[str, Any], index: int, field: str, text: str
) -> None:
    document = _copy(recorded)
    response = document["receipts"]["responses"][index]
    assume(response[field] != text)
    response[field] = text
    report = attest_receipts(document)
    assert report.verdict == "rejected"
