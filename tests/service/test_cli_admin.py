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
