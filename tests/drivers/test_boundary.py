"""Drivers never import or name evidence (ARCHITECTURE 2: the import contract, and more)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import playproof.drivers

DRIVER_SOURCES = sorted(Path(playproof.drivers.__file__).parent.glob("*.py"))
FORBIDDEN_MODULES = (
    "playproof.core.evidence",
    "playproof.core.tracker",
    "playproof.adapters",
    "playproof.workers",
    "playproof.verify",
    "playproof.sign",
)


def _identifiers(tree: ast.AST) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            names.add(node.id)
        elif isinstance(node, ast.Attribute):
            names.add(node.attr)
        elif isinstance(node, ast.alias):
            names.add(node.name)
            names.add(node.asname or "")
        elif isinstance(node, ast.ImportFrom):
            names.add(node.module or "")
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
    return names


@pytest.mark.parametrize("source", DRIVER_SOURCES, ids=lambda path: path.name)
def test_no_driver_module_imports_or_names_evidence(source: Path) -> None:
    names = _identifiers(ast.parse(source.read_text(encoding="utf-8")))
    assert not [name for name in names if "evidence" in name.lower()]
    assert not [n for n in names if n.startswith(FORBIDDEN_MODULES)]


def test_the_boundary_check_can_fail() -> None:
    tree = ast.parse("from playproof.core.evidence import Evidence\nx = game.evidence()")
    assert {"playproof.core.evidence", "Evidence", "evidence"} <= _identifiers(tree)
