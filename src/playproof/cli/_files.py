"""Where the CLI keeps keys and records, and how it reads them (bounded)."""

from __future__ import annotations

import json
import os
import re
from datetime import UTC, datetime
from pathlib import Path

from playproof._atomic import write_atomic
from playproof._bounded import read_bounded
from playproof.errors import SigningKeyError
from playproof.sign import MAX_ENVELOPE_BYTES, MAX_KEY_FILE_BYTES, SigningKey, VerifyingKey

__all__ = [
    "DEFAULT_KEY_DIR",
    "check_key_dir",
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


def check_key_dir(key_dir: Path) -> None:
    """Fail now if the key in ``key_dir`` cannot be loaded, or could not be created there.

    A run checks this before it starts and creates the key only after it ends,
    so a rejected command line leaves no key behind and a finished run is not
    lost to an unusable key folder.
    """
    private = key_paths(key_dir)[0]
    if private.exists():
        SigningKey.load(private)
        return
    folder = key_dir
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    if not folder.is_dir() or not os.access(folder, os.W_OK | os.X_OK):
        raise SigningKeyError(
            f"cannot create a signing key in {key_dir}: {folder} is not a writable folder; "
            "pass --key-dir with a folder you can write"
        )


def trusted_keys(paths: list[Path], key_dir: Path) -> list[VerifyingKey]:
    """The keys named on the command line, else the local public key if there is one."""
    if paths:
        return [_public_key(p) for p in paths]
    public = key_paths(key_dir)[1]
    return [_public_key(public)] if public.exists() else []


def _public_key(path: Path) -> VerifyingKey:
    """A public key file, read like any other document (regular file, bounded)."""
    data = read_bounded(path, MAX_KEY_FILE_BYTES, "public key file", SigningKeyError)
    try:
        return VerifyingKey.from_pem(data)
    except SigningKeyError as exc:
        raise SigningKeyError(f"{path}: {exc}") from exc


def read_document(path: Path) -> bytes:
    """Read a record or envelope file, refusing anything over the envelope bound."""
    data = read_bounded(path, MAX_ENVELOPE_BYTES, "record file")
    return data


def write_document(path: Path, document: object) -> Path:
    """Write JSON to ``path`` atomically (see :func:`playproof._atomic.write_atomic`)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, (json.dumps(document, indent=2, sort_keys=True) + "\n").encode("utf-8"))
    return path


def default_record_path(target_name: str, seed: int) -> Path:
    """``playproof-runs/<family>-<name>-s<seed>-<UTC time>.json``."""
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")
    # Ad-hoc names hold ':' and whole paths (gb:roms/game.gb); keep the file name portable.
    name = re.sub(r"[^A-Za-z0-9_]+", "-", target_name).strip("-")[-80:] or "run"
    return DEFAULT_RUNS_DIR / f"{name}-s{seed}-{stamp}.json"
