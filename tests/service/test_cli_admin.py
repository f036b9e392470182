"""``playproof service challenge add`` and ``owner add --admin`` on an embedded database."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from sqlalchemy import select

from playproof.service.db import make_engine, session_factory
from playproof.service.leaderboards.models import Challenge
from playproof.service.leaderboards.services import challenge_seeds
from playproof.service.owners.models import Owner
from playproof.service.owners.services import owner_for_token


def _playproof(*args: str) -> subprocess.CompletedProcess[str]:
    command = str(Path(sys.executable).with_name("playproof"))
    return subprocess.run(
        [command, *args],
        capture_output=True,
        text=True,
        timeout=300,
        env=dict(os.environ),
        check=False,
    )


def test_challenge_add_stores_the_terms(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'service.db'}"
    made = _playproof(
        "service", "challenge", "add", "native/2048", "--seeds", "1,2,5-7", "--budget", "0.5",
        "--opens", "2027-01-01T00:00:00", "--closes", "2027-02-01T00:00:00+00:00",
        "--database-url", url, "--json",
    )  # fmt: skip
    assert made.returncode == 0, made.stderr
    challenge_id = json.loads(made.stdout)["id"]
    engine = make_engine(url)
    try:
        with session_factory(engine)() as session:
            stored = session.get(Challenge, challenge_id)
            assert stored is not None
            assert challenge_seeds(stored) == [1, 2, 5, 6, 7]
            assert stored.budget_usd == 0.5
            assert stored.target_name == "native/2048"
    finally:
        engine.dispose()


def test_challenge_add_refuses_bad_terms_with_an_error(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'service.db'}"
    base = ["service", "challenge", "add", "native/2048", "--budget", "1", "--database-url", url]
    window = ["--opens", "2027-01-01", "--closes", "2027-02-01"]
    for extra in (
        ["--seeds", "1,x", *window],
        ["--seeds", "9-1", *window],
        ["--seeds", "1", "--opens", "2027-02-01", "--closes", "2027-01-01"],
        ["--seeds", "1", "--opens", "yesterday", "--closes", "2027-01-01"],
    ):
        refused = _playproof(*base, *extra)
        assert refused.returncode == 3, (extra, refused.stdout, refused.stderr)
        assert "ServiceError" in refused.stderr
    unknown = _playproof(
        "service", "challenge", "add", "native/nope", "--seeds", "1", "--budget", "1",
        *window, "--database-url", url,
    )  # fmt: skip
    assert unknown.returncode == 3
    assert "native/nope" in unknown.stderr


def test_owner_add_admin(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'service.db'}"
    assert (
        _playproof("service", "owner", "add", "root", "--admin", "--database-url", url).returncode
        == 0
    )
    assert _playproof("service", "owner", "add", "plain", "--database-url", url).returncode == 0
    engine = make_engine(url)
    try:
        with session_factory(engine)() as session:
            admins = {o.name: o.admin for o in session.scalars(select(Owner))}
        assert admins == {"root": True, "plain": False}
    finally:
        engine.dispose()


def test_token_revoke_deletes_every_token_of_the_owner_only(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'service.db'}"
    for name in ("alice", "bob"):
        assert _playproof("service", "owner", "add", name, "--database-url", url).returncode == 0
    tokens = [
        (name, _playproof("service", "token", "create", name, "--database-url", url).stdout.strip())
        for name in ("alice", "alice", "bob")
    ]
    revoked = _playproof("service", "token", "revoke", "alice", "--database-url", url)
    assert revoked.returncode == 0, revoked.stderr
    assert "revoked" in revoked.stdout
    assert "2 token(s)" in revoked.stdout
    engine = make_engine(url)
    try:
        with session_factory(engine)() as session:
            for name, token in tokens:
                assert token not in revoked.stdout
                found = owner_for_token(session, token)
                assert (found is None) == (name == "alice"), name
    finally:
        engine.dispose()
    unknown = _playproof("service", "token", "revoke", "nobody", "--database-url", url)
    assert unknown.returncode != 0
