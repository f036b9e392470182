"""What the emulator adapters share: strict options parsed from JSON, the platform they
declare, and the seed range they accept."""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar, Self, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

from playproof.core.canonical import canonical_json
from playproof.core.game import MAX_SEED, Platform, VerificationMode
from playproof.errors import FormatError, TargetError

__all__ = ["AdapterOptions", "check_seed", "option_problems", "replay_platform", "validate_options"]

_Model = TypeVar("_Model", bound=BaseModel)


def replay_platform(family: str, *, images: bool) -> Platform:
    """An emulator platform verified by replay, with checkpoints, and images when shown."""
    return Platform(
        family=family,
        modes=(VerificationMode.REPLAY,),
        capabilities=("checkpoint", "images") if images else ("checkpoint",),
    )


def check_seed(seed: int) -> None:
    """TargetError unless ``seed`` is in ``0..MAX_SEED``."""
    if not 0 <= seed <= MAX_SEED:
        raise TargetError(f"seed {seed} is outside 0..{MAX_SEED}")


class AdapterOptions(BaseModel):
    """Options an adapter's ``make_game`` takes; subclasses name themselves in ``LABEL``."""

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)

    LABEL: ClassVar[str] = "adapter"

    @classmethod
    def parse(cls, options: dict[str, object]) -> Self:
        """Validate JSON options; every problem is reported in one TargetError."""
        try:
            # Through JSON so that strict mode takes JSON arrays for tuples, as a worker sends them.
            return cls.model_validate_json(canonical_json(options))
        except FormatError as exc:
            raise TargetError(f"options are not JSON: {exc}") from exc
        except ValidationError as exc:
            raise TargetError(f"invalid {cls.LABEL} options: {option_problems(exc)}") from exc


def option_problems(exc: ValidationError) -> str:
    """Every problem ``exc`` found, as ``field.path: message`` joined by ``; ``."""
    return "; ".join(
        f"{'.'.join(str(p) for p in err['loc']) or 'options'}: {err['msg']}" for err in exc.errors()
    )


def validate_options(model: type[_Model], options: Mapping[str, object], label: str) -> _Model:
    """``options`` (Python values) validated by ``model``; every problem in one TargetError."""
    try:
        return model.model_validate(options)
    except ValidationError as exc:
        raise TargetError(f"invalid {label} options: {option_problems(exc)}") from None
