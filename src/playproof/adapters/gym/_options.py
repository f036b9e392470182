"""Options of the Gymnasium adapter (JSON, validated at the boundary)."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from playproof.adapters.options import AdapterOptions
from playproof.adapters.screen import MAX_IMAGE_SCALE

__all__ = ["DEFAULT_SCALE", "MAX_KWARGS", "GymOptions"]

DEFAULT_SCALE = 1000
"""Rewards, float observations and numeric info are multiplied by this and rounded."""
MAX_KWARGS = 32
MAX_SCALE = 10**9

ActionName = Annotated[str, Field(pattern=r"^[a-z][a-z0-9_]{0,31}$")]
KwargKey = Annotated[str, Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")]
KwargValue = bool | int | float | Annotated[str, Field(max_length=256)] | None


class GymOptions(AdapterOptions):
    """How to build a Gymnasium session: env id, constructor kwargs, integer scale, images."""

    LABEL = "Gymnasium"

    env_id: Annotated[str, Field(pattern=r"^[A-Za-z0-9_.:/-]{1,200}$")]
    """A registered id (``CartPole-v1``) or ``module:Id`` to import a module that registers it."""
    kwargs: Annotated[dict[KwargKey, KwargValue], Field(max_length=MAX_KWARGS)] = Field(
        default_factory=dict
    )
    """Keyword arguments for ``gymnasium.make`` (``{"is_slippery": false}``)."""
    max_episode_steps: Annotated[int, Field(ge=1, le=10**9)] | None = None
    """Override of the registered time limit (None keeps the registered one)."""
    scale: Annotated[int, Field(ge=1, le=MAX_SCALE)] = DEFAULT_SCALE
    action_names: tuple[ActionName, ...] | None = None
    """Names of the Discrete actions in order (None: from the environment or a known table)."""
    image_scale: Annotated[int, Field(ge=0, le=MAX_IMAGE_SCALE)] = 0
    """0 = text only; n > 0 renders ``rgb_array`` frames as PNG upscaled n times."""
