"""Where shipped corpora live: manifests and answers in the package, ROMs in the shared folder."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["SHIPPED", "project_root", "shared_dir", "shipped_paths"]

SHIPPED = ("blargg",)
"""Corpora whose manifest and answers ship with playproof."""
_DATA = Path(__file__).parent / "data"


def project_root() -> Path:
    """The project checkout this package runs from (src layout: three folders up)."""
    return Path(__file__).resolve().parents[3]


def shared_dir() -> Path:
    """``$PLAYPROOF_SHARED``, else ``<project root>/../shared``."""
    configured = os.environ.get("PLAYPROOF_SHARED")
    return Path(configured) if configured else project_root().parent / "shared"


def shipped_paths(name: str) -> tuple[Path, Path, Path]:
    """(manifest, answers, ROM folder) of the shipped corpus ``name``."""
    if name not in SHIPPED:
        from playproof.errors import TargetError

        raise TargetError(f"no shipped corpus {name!r}; shipped: {', '.join(SHIPPED)}")
    folder = _DATA / name
    return folder / "manifest.json", folder / "answers.json", shared_dir() / "corpora" / name
