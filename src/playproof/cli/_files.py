"""Where the CLI keeps keys and records, and how it reads them (bounded)."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from pathlib import Path

from playproof._bounded import read_bounded
from playproof.sign import MAX_ENVELOPE_BYTES, SigningKey, VerifyingKey

__all__ = [
    "DEFAULT_KEY_DIR",
    "DEFAULT_RUNS_DIR",
    "default_record_path",
    "ensure_signing_key",
    "key_paths",
    "read_document",
    "trusted_keys",
    "write_document",
]

DEFAULT_KEY_DIR = Path(os.environ.get("PLAYPROOF_KEY_DIR", ".playproof/keys"))
"""Keys live under the working directory unless PLAYPROOF_KEY_DIR says otherwise."""
DEFAULT_RUNS_DIR = Path("playproof-runs")
"""Signed records are written here (under the working directory) unless --out is given."""


def key_paths(key_dir: Path) -> tuple[Path, Path]:
    """The private and public key files in ``key_dir``."""
    return key_dir / "signing.pem", key_dir / "signing.pub.pem"


def ensure_signing_key(key_dir: Path) -> tuple[SigningKey, bool]:
    """Load the signing key in ``key_dir``, creating one when none exists; (key, created)."""
    private, public = key_paths(key_dir)
    if private.exists():
        return SigningKey.load(private), False
    key = SigningKey.generate()
    key_dir.mkdir(parents=True, exist_ok=True)
    key.save(private)
    key.verifying_key.save(public, overwrite=True)
    return key, True


def trusted_keys(paths: list[Path], key_dir: Path) -> list[VerifyingKey]:
    """The keys named on the command line, else the local public key if there is one."""
    if paths:
        return [VerifyingKey.load(p) for p in paths]
    public = key_paths(key_dir)[1]
    return [VerifyingKey.load(public)] if public.exists() else []


def read_document(path: Path) -> bytes:
    """Read a record or envelope file, refusing anything over the envelope bound."""
    data = read_bounded(path, MAX_ENVELOPE_BYTES, "record file")
    return data


def write_document(path: Path, document: object) -> Path:
    """Write JSON to ``path`` atomically (temporary file in the same folder, then rename)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.tmp")
    with temporary.open("w", encoding="utf-8") as handle:
        json.dump(document, handle, indent=2, sort_keys=True)
        handle.write("\n")
        handle.flush()
        os.fsync(handle.fileno())
    temporary.replace(path)
    return path


def default_record_path(target_name: str, seed: int) -> Path:
    """``playproof-runs/<family>-<name>-s<seed>-<UTC time>.json``."""
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")
    return DEFAULT_RUNS_DIR / f"{target_name.replace('/', '-')}-s{seed}-{stamp}.json"
