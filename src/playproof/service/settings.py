"""Service settings: where the database is, how large an upload may be, how replays run."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

from playproof.sign import MAX_ENVELOPE_BYTES

__all__ = [
    "DEFAULT_DATABASE_FILE",
    "DEFAULT_LOG_KEY_FILE",
    "DEFAULT_HOST",
    "DEFAULT_PORT",
    "MAX_REQUEST_BYTES",
    "MAX_GRADE_CASES",
    "MAX_UPLOAD_BYTES",
    "ServiceSettings",
    "default_database_url",
]

DEFAULT_DATABASE_FILE = Path(".playproof") / "service.db"
"""The embedded SQLite database, relative to the working directory."""
DEFAULT_LOG_KEY_FILE = Path(".playproof") / "service-log.key"
"""The transparency log's signing key, relative to the working directory."""
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8400

MAX_UPLOAD_BYTES = MAX_ENVELOPE_BYTES
"""The largest signed record the service accepts: exactly what a verifier reads."""
MAX_REQUEST_BYTES = 64 * 1024
"""The largest body of any request that is not an upload."""
MAX_GRADE_CASES = 10_000
"""The most cases a grade record may hold by default (the shipped corpora have at most 66).

A grade's page parses its record on every view, so the count bounds what an
anonymous page view can cost; a larger upload is refused (413) with the count."""
DEFAULT_REPLAY_WORKERS = 1
"""Replay processes by default; one leaves the API responsive on a small machine."""


def default_database_url(base: Path | None = None) -> str:
    """The SQLite URL of the embedded database under ``base`` (the working directory)."""
    path = (base or Path.cwd()) / DEFAULT_DATABASE_FILE
    return f"sqlite:///{path}"


class ServiceSettings(BaseModel):
    """How one service process runs.

    ``log_key_file`` is the transparency log's Ed25519 key (created on first
    start); None keeps no log. ``max_grade_cases`` is the most cases an
    uploaded grade record may hold. ``replay_delay_s`` holds every replay back by
    that many seconds before it starts; it exists so that tests can stop a
    server while a replay is pending.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    database_url: str
    max_upload_bytes: Annotated[int, Field(gt=0, le=MAX_UPLOAD_BYTES)] = MAX_UPLOAD_BYTES
    replay_workers: Annotated[int, Field(ge=1, le=64)] = DEFAULT_REPLAY_WORKERS
    max_grade_cases: Annotated[int, Field(ge=1, le=1_000_000)] = MAX_GRADE_CASES
    replay_delay_s: Annotated[float, Field(ge=0, le=3600)] = 0.0
    log_key_file: Path | None = None
