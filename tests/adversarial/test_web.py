"""Hostile input to the web pages: forged cookies and CSRF tokens, open redirects, markup."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest

pytest.importorskip("jinja2", reason="the web pages need the server extra")

from hypothesis import given
from hypothesis import strategies as st
from sqlalchemy import delete

from playproof.errors import ServiceError
from playproof.service.db import make_engine, session_factory, upgrade
from playproof.service.owners.models import ApiToken
from playproof.service.owners.services import add_owner, create_token
from playproof.service.web.frames import MilestoneMark, cached_events, cached_index, read_frame
from playproof.service.web.plots import series_plot, suite_chart, timeline_plot
from playproof.service.web.routes import _safe_next
from playproof.service.web.signin import SessionKeys, load_session_key

KEYS = SessionKeys(b"k" * 32)


@pytest.fixture
def sessions(tmp_path: Path):  # type: ignore[no-untyped-def]
    engine = make_engine(f"sqlite:///{tmp_path / 'db.sqlite'}")
    upgrade(engine)
    yield session_factory(engine)
    engine.dispose()


def _signed_in(sessions) -> tuple[str, str]:  # type: ignore[no-untyped-def]
    with sessions() as session:
        owner = add_owner(session, "alice")
        token = create_token(session, owner)
        session.commit()
        signed = KEYS.sign_in(session, token)
    assert signed is not None
    return token, signed[1]


def test_a_genuine_session_cookie_names_its_owner(sessions) -> None:  # type: ignore[no-untyped-def]
    _token, cookie = _signed_in(sessions)
    with sessions() as session:
        viewer = KEYS.viewer(session, cookie)
    assert viewer is not None
    assert viewer.name == "alice"


def test_a_tampered_session_cookie_is_nobody(sessions) -> None:  # type: ignore[no-untyped-def]
    _token, cookie = _signed_in(sessions)
    encoded, _, mac = cookie.partition(".")
    fields = json.loads(base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4)))
    fields["o"] = fields["o"] + 1
    forged = base64.urlsafe_b64encode(json.dumps(fields).encode()).decode().rstrip("=")
    with sessions() as session:
        assert KEYS.viewer(session, f"{forged}.{mac}") is None
        assert SessionKeys(b"x" * 32).viewer(session, cookie) is None
        assert KEYS.viewer(session, cookie + "A") is None
        assert KEYS.viewer(session, "a" * 10_000) is None


def test_deleting_the_token_ends_its_sessions(sessions) -> None:  # type: ignore[no-untyped-def]
    _token, cookie = _signed_in(sessions)
    with sessions() as session:
        session.execute(delete(ApiToken))
        session.commit()
        assert KEYS.viewer(session, cookie) is None


def test_a_wrong_token_opens_no_session(sessions) -> None:  # type: ignore[no-untyped-def]
    _signed_in(sessions)
    with sessions() as session:
        assert KEYS.sign_in(session, "pp_not-a-token") is None
        assert KEYS.sign_in(session, "x" * 1000) is None


@given(st.text(max_size=80))
def test_only_minted_csrf_tokens_pass(token: str) -> None:
    assert not KEYS.csrf_matches(token, token) or KEYS.csrf_valid(token)
    minted = KEYS.new_csrf()
    assert KEYS.csrf_matches(minted, minted)
    assert not KEYS.csrf_matches(token, minted) or token == minted
    assert not KEYS.csrf_matches(minted, None)


@pytest.mark.parametrize(
    "target", ["//evil.example/x", "https://evil.example/", "/\\evil.example", "me", ""]
)
def test_sign_in_never_redirects_off_site(target: str) -> None:
    assert _safe_next(target) == "/me"


def test_sign_in_keeps_a_path_on_this_site() -> None:
    assert _safe_next("/runs/abc") == "/runs/abc"


def test_plots_escape_every_name() -> None:
    hostile = "<script>alert(1)</script>"
    drawn = str(timeline_plot(10, [(hostile, 3)]))
    assert "<script>" not in drawn
    assert "&lt;script&gt;" in drawn
    assert "<script>" not in str(
        series_plot([1.0, None, 2.0], title=hostile, unit=hostile, plot_id="p")
    )


@pytest.mark.parametrize("digest", ["../" * 5 + "etc", "A" * 64, "0" * 63, ""])
def test_the_frame_cache_takes_only_record_digests(tmp_path: Path, digest: str) -> None:
    with pytest.raises(ServiceError):
        cached_index(tmp_path, digest)


def test_a_damaged_cache_index_is_regenerated_not_trusted(tmp_path: Path) -> None:
    digest = "ab" * 32
    (tmp_path / digest).mkdir()
    (tmp_path / digest / "index.json").write_text('{"kind": "image", "turns": -1}')
    assert cached_index(tmp_path, digest) is None


def test_a_frame_outside_the_run_is_refused(tmp_path: Path) -> None:
    from playproof.service.web.frames import FrameIndex

    index = FrameIndex(
        record_digest="cd" * 32,
        kind="text",
        turns=3,
        verified=(MilestoneMark(id="moved", turn=1),),
        claimed=(),
        diverged_at=None,
        divergence=None,
    )
    with pytest.raises(ServiceError):
        read_frame(tmp_path, index, 4)


def test_the_session_key_file_is_private(tmp_path: Path) -> None:
    path = tmp_path / "web-session.key"
    key = load_session_key(path)
    assert len(key) == 32
    assert path.stat().st_mode & 0o077 == 0
    assert load_session_key(path) == key
    path.write_bytes(b"short")
    with pytest.raises(ServiceError):
        load_session_key(path)


def test_the_suite_chart_escapes_suite_names() -> None:
    hostile = "<img src=x onerror=alert(1)>"
    drawn = str(suite_chart([(hostile, 1, 2), ("plain", 0, 3)]))
    assert "<img" not in drawn
    assert "&lt;img" in drawn


@pytest.mark.parametrize(
    "content",
    [
        '{"not": "a list"}',
        "[1, 2, 3]",
        "[",
        "\xff\xfe",
    ],
)
def test_damaged_replayed_events_are_not_trusted(tmp_path: Path, content: str) -> None:
    digest = "ef" * 32
    (tmp_path / digest).mkdir()
    (tmp_path / digest / "events.json").write_text(content, encoding="latin-1")
    assert cached_events(tmp_path, digest) is None


def test_an_oversized_events_file_is_refused_not_read(tmp_path: Path) -> None:
    from playproof.service.web.frames import MAX_EVENTS_BYTES

    digest = "fe" * 32
    (tmp_path / digest).mkdir()
    with (tmp_path / digest / "events.json").open("wb") as out:
        out.truncate(MAX_EVENTS_BYTES + 1)
    assert cached_events(tmp_path, digest) is None


@pytest.mark.parametrize("sort", ["agents", "agent; drop table runs", "RANK", ""])
def test_an_unknown_board_order_is_refused(sessions, sort: str) -> None:  # type: ignore[no-untyped-def]
    from playproof.service.leaderboards.services import leaderboard
    from playproof.service.problems import Problem

    with sessions() as session, pytest.raises(Problem) as raised:
        leaderboard(session, "native/2048", sort=sort)
    assert raised.value.status == 422
