"""The log routes: heads of any size, inclusion by leaf, consistency, the cached tree."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

from sqlalchemy import func, select

import playproof
from playproof.core.record import RunRecord
from playproof.service.log.models import LogLeaf
from playproof.service.log.services import LogCache, append_verified
from playproof.service.runs.models import Run
from playproof.sign import SigningKey
from playproof.transparency import MerkleTree, record_leaf_hash

from .conftest import Service


def _verified_runs(
    service: Service, signer: SigningKey, record: RunRecord, token: str, count: int
) -> list[str]:
    made = []
    for _ in range(count):
        again = RunRecord.model_validate(
            {**record.to_json(), "started_at": f"start {uuid.uuid4().hex}"}
        )
        body = playproof.sign_record(again, signer).to_bytes()
        accepted = service.upload(body, token)
        assert accepted.status_code == 202, accepted.text  # a new run, not a repeat
        run_id = accepted.json()["id"]
        assert service.verdict(run_id)["status"] == "verified"
        made.append(run_id)
    return made


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    command = str(Path(sys.executable).with_name("playproof"))
    return subprocess.run(
        [command, *args], capture_output=True, text=True, timeout=120, check=False
    )


def _write(folder: Path, name: str, value: Any) -> str:
    path = folder / name
    path.write_text(json.dumps(value))
    return str(path)


def test_the_cli_accepts_the_servers_consistency_proofs_across_uploads(
    service: Service, signer: SigningKey, record_2048: RunRecord, tmp_path: Path
) -> None:
    token = service.owner("alice", (signer.verifying_key,))
    key = _write(tmp_path, "x", None)
    Path(key).write_text(service.client.get("/api/v1/log/key").json()["public_key_pem"])
    _verified_runs(service, signer, record_2048, token, 1)
    first = service.client.get("/api/v1/log/head").json()
    assert first["tree_size"] == 1
    _verified_runs(service, signer, record_2048, token, 2)
    second = service.client.get("/api/v1/log/head").json()
    assert second["tree_size"] == 3
    # The head of an earlier size is the same signed head as when it was current.
    assert service.client.get("/api/v1/log/head?size=1").json() == first
    proof = service.client.get("/api/v1/log/consistency?first=1&second=3").json()
    old = _write(tmp_path, "old.json", first)
    new = _write(tmp_path, "new.json", second)
    good = _write(tmp_path, "proof.json", proof)
    args = ["log", "verify", "consistency", "--old", old, "--new", new, "--log-key", key]
    accepted = _cli(*args, "--proof", good)
    assert accepted.returncode == 0, accepted.stdout + accepted.stderr
    # Swapped heads, or a proof for other sizes, are refused.
    assert _cli(*args[:3], "--old", new, "--new", old, "--log-key", key, "--proof", good).returncode
    other = service.client.get("/api/v1/log/consistency?first=2&second=3").json()
    assert _cli(*args, "--proof", _write(tmp_path, "other.json", other)).returncode != 0
    # An inclusion proof by leaf checks against the head of its size.
    inclusion = service.client.get("/api/v1/log/inclusion?leaf=0&size=1").json()
    with service.sessions() as session:
        leaf_digest = session.scalar(select(LogLeaf.record_digest).where(LogLeaf.leaf_index == 0))
    included = _cli(
        "log", "verify", "inclusion", "--head", old, "--log-key", key,
        "--proof", _write(tmp_path, "inc.json", inclusion), "--leaf-digest", str(leaf_digest),
    )  # fmt: skip
    assert included.returncode == 0, included.stdout + included.stderr


def test_sizes_beyond_the_log_are_404(service: Service) -> None:
    for path in (
        "/api/v1/log/head?size=1",
        "/api/v1/log/consistency?first=0&second=1",
        "/api/v1/log/consistency?first=2&second=1",
        "/api/v1/log/inclusion?leaf=0",
    ):
        answer = service.client.get(path)
        assert answer.status_code == 404, path


def test_the_cache_extends_with_leaves_another_process_appended(
    service: Service, signer: SigningKey, record_2048: RunRecord
) -> None:
    token = service.owner("alice", (signer.verifying_key,))
    runs = _verified_runs(service, signer, record_2048, token, 2)
    cache: LogCache = service.client.app.state.service.log_cache  # type: ignore[attr-defined]
    key = service.client.app.state.service.log_key  # type: ignore[attr-defined]
    with service.sessions() as session:
        cache.head(session, key)
        assert cache.size == 2
        # Another server process appends a leaf straight into the database.
        other = session.get(Run, runs[0])
        assert other is not None
        append_verified(session, _clone(session, other), "f" * 64)
        session.commit()
    head = service.client.get("/api/v1/log/head").json()
    assert head["tree_size"] == 3
    assert cache.size == 3
    with service.sessions() as session:
        digests = list(session.scalars(select(LogLeaf.record_digest).order_by(LogLeaf.leaf_index)))
        assert session.scalar(select(func.count()).select_from(LogLeaf)) == 3
    rebuilt = MerkleTree(record_leaf_hash(d) for d in digests)
    assert head["root_hash"] == rebuilt.root().hex()


def _clone(session: Any, run: Run) -> str:
    """A copy of a stored run under a new id (a run verified by another process)."""
    copy = Run(
        **{
            c.name: getattr(run, c.name)
            for c in Run.__table__.columns
            if c.name not in {"id", "envelope_sha256"}
        },
        id=uuid.uuid4().hex,
        envelope_sha256=uuid.uuid4().hex * 2,
    )
    session.add(copy)
    session.flush()
    return copy.id
