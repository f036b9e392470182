"""The policy check groups import no model library, driver, engine or service."""

import ast
from pathlib import Path

import playproof.policy

PURE = (
    "checks",
    "validate",
    "events",
    "envelope",
    "actions",
    "authorization",
    "reasons",
    "rebalance",
    "rebalance_checks",
    "groups",
)
FORBIDDEN = ("openai", "httpx", "playproof.drivers", "playproof.engine", "playproof.service")


def _imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
    return found


def test_check_group_modules_import_no_model_library() -> None:
    folder = Path(playproof.policy.__file__).parent
    for name in PURE:
        imported = _imports(folder / f"{name}.py")
        bad = {m for m in imported if m.startswith(FORBIDDEN) or m.startswith("solders")}
        assert not bad, f"{name}.py imports {bad}"
