"""Picklable game specs: what a pool process needs to build its own game session."""

from __future__ import annotations

from functools import cache
from importlib import import_module
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field

from playproof.core.game import Game
from playproof.errors import TargetError
from playproof.targets import Target, get_target
from playproof.targets.packaged import DATA, packaged

__all__ = ["GameSpec", "resolve_target"]


def resolve_target(name: str) -> Target:
    """A registered target, or a packaged target folder not yet registered as an entry point."""
    try:
        return get_target(name)
    except TargetError:
        family, _, leaf = name.partition("/")
        if family and leaf and (DATA / family / leaf / "target.json").is_file():
            return packaged(family, leaf)
        raise


class GameSpec(BaseModel):
    """A game by target name, or by ``"module:callable"`` factory and JSON options."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    target: str | None = None
    factory: Annotated[str, Field(pattern=r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$")] | None = None
    options: dict[str, Any] = Field(default_factory=dict)
    worker: bool = False
    """Run the game in a worker child of the process that opens it."""

    @classmethod
    def of_target(cls, target: Target | str, *, worker: bool = False) -> GameSpec:
        """The spec of a packaged target (its pinned build is checked on open)."""
        name = target if isinstance(target, str) else target.name
        return cls(target=name, worker=worker)

    def open(self) -> Game:
        """Build a fresh game session."""
        if self.target is not None:
            return resolve_target(self.target).open(worker=self.worker)
        if self.factory is None:
            raise TargetError("a game spec needs a target name or a factory")
        if self.worker:
            from playproof.workers import WorkerGame  # local: only worker specs need it

            return WorkerGame(self.factory, self.options)
        built: Game = _factory(self.factory)(**self.options)
        return built


@cache
def _factory(spec: str) -> Any:
    module_name, _, attr = spec.partition(":")
    try:
        return getattr(import_module(module_name), attr)
    except (ImportError, AttributeError) as exc:
        raise TargetError(f"cannot load game factory {spec}: {exc}") from exc
