"""A session over any registered Gymnasium environment with a Discrete action space."""

from __future__ import annotations

import hashlib
import importlib
import math
import re
from collections.abc import Mapping
from typing import Any

import gymnasium
import numpy as np
from gymnasium import spaces
from gymnasium.envs.registration import load_env_creator

from playproof.adapters.gym._names import action_names
from playproof.adapters.gym._options import GymOptions
from playproof.adapters.screen import png_image, shade_text
from playproof.adapters.sealed import seal, unseal
from playproof.core.canonical import canonical_json, digest, parse_json
from playproof.core.evidence import Evidence
from playproof.core.game import (
    MAX_SEED,
    BuildIdentity,
    GameDescriptor,
    Platform,
    VerificationMode,
)
from playproof.core.observation import Image, Observation
from playproof.errors import CheckpointError, FormatError, TargetError

__all__ = [
    "ADAPTER_VERSION",
    "MAX_CHECKPOINT_BYTES",
    "MAX_INFO_KEYS",
    "MAX_OBSERVATION_CHANNELS",
    "GymGame",
]

ADAPTER_VERSION = "playproof.adapters.gym/1"
"""Bumped whenever a change here could change evidence for the same inputs."""
MAX_CHECKPOINT_BYTES = 16 << 20
"""A checkpoint holds the seed and every applied input; longer episodes cannot checkpoint."""
MAX_INFO_KEYS = 32
"""At most this many numeric ``info`` entries become evidence (first by sorted key)."""
MAX_OBSERVATION_CHANNELS = 16
"""Box observations up to this size are also published component by component."""
_MAX_TEXT_NUMBERS = 64
_OBSERVATION_SPACES = (spaces.Box, spaces.Discrete, spaces.MultiBinary, spaces.MultiDiscrete)
# ANSI SGR sequences: a highlighted span (non-reset code ... reset) becomes [span].
_HIGHLIGHT = re.compile(r"\x1b\[(?!0?m)[0-9;]*m(.*?)\x1b\[0?m", re.DOTALL)
_ANY_ESCAPE = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_KEY = re.compile(r"[^a-z0-9_]")


def _import_id(env_id: str) -> str:
    """Import the module of a ``module:Id`` env id (it registers the id); return the id."""
    module, sep, name = env_id.partition(":")
    if not sep:
        return env_id
    try:
        importlib.import_module(module)
    except ImportError as exc:
        raise TargetError(f"cannot import {module!r} for {env_id}: {exc}") from exc
    return name


def _render_modes(env_id: str) -> tuple[str, ...]:
    try:
        spec = gymnasium.spec(env_id)
    except gymnasium.error.Error as exc:
        raise TargetError(f"Gymnasium has no environment {env_id!r}: {exc}") from exc
    if spec.nondeterministic:
        raise TargetError(f"{env_id} is registered as nondeterministic; it cannot be replayed")
    entry = spec.entry_point
    creator = load_env_creator(entry) if isinstance(entry, str) else entry
    metadata: Any = getattr(creator, "metadata", {}) or {}
    return tuple(str(mode) for mode in metadata.get("render_modes", ()))


def _plain_ansi(text: str) -> str:
    return _ANY_ESCAPE.sub("", _HIGHLIGHT.sub(r"[\1]", text)).strip("\n")


def _scaled(value: float, scale: int) -> int | None:
    number = float(value)
    return round(number * scale) if math.isfinite(number) else None


class GymGame:
    """A Gymnasium session (see :mod:`playproof.adapters.gym` for the evidence it records)."""

    def __init__(self, options: GymOptions) -> None:
        self._options = options
        env_id = _import_id(options.env_id)
        modes = _render_modes(env_id)
        if options.image_scale:
            if "rgb_array" not in modes:
                raise TargetError(
                    f"{env_id} cannot render rgb_array frames, so images cannot be on"
                )
            render_mode: str | None = "rgb_array"
        else:
            render_mode = "ansi" if "ansi" in modes else None
        extra: dict[str, Any] = dict(options.kwargs)
        if options.max_episode_steps is not None:
            extra["max_episode_steps"] = options.max_episode_steps
        try:
            env: Any = gymnasium.make(
                env_id, render_mode=render_mode, disable_env_checker=True, **extra
            )
        except (gymnasium.error.Error, TypeError, ValueError, ImportError) as exc:
            raise TargetError(f"cannot make Gymnasium environment {env_id}: {exc}") from exc
        self._env = env
        self._render_mode = render_mode
        if not isinstance(env.action_space, spaces.Discrete):
            env.close()
            raise TargetError(
                f"{env_id} has a {type(env.action_space).__name__} action space; playproof "
                "drives only Discrete action spaces (one word per action)"
            )
        if not isinstance(env.observation_space, _OBSERVATION_SPACES):
            env.close()
            raise TargetError(
                f"{env_id} has a {type(env.observation_space).__name__} observation space; "
                "playproof hashes Box, Discrete, MultiBinary and MultiDiscrete observations"
            )
        count, start = int(env.action_space.n), int(env.action_space.start)
        names = action_names(env.unwrapped, count, options.action_names)
        self._actions = {name: start + index for index, name in enumerate(names)}
        self._discrete_obs = isinstance(env.observation_space, spaces.Discrete)
        shape = env.observation_space.shape or ()
        size = int(np.prod(shape))
        self._obs_keys = (
            tuple(f"obs_{i}" for i in range(size)) if 0 < size <= MAX_OBSERVATION_CHANNELS else ()
        )
        identity = {
            "adapter": ADAPTER_VERSION,
            "library": f"gymnasium {gymnasium.__version__}",
            "env_id": env.spec.id if env.spec is not None else env_id,
            "entry_point": str(env.spec.entry_point) if env.spec is not None else None,
            "kwargs": dict(options.kwargs),
            "max_episode_steps": env.spec.max_episode_steps if env.spec is not None else None,
            "scale": options.scale,
            "actions": list(names),
        }
        self._descriptor = GameDescriptor(
            id=f"gym-{env_id.lower().replace('/', '-')}"[:128],
            vocabulary=names,
            build=BuildIdentity(
                id=f"gymnasium-{gymnasium.__version__}/{env_id}"[:128], digest=digest(identity)
            ),
            platform=Platform(
                family="gym",
                modes=(VerificationMode.REPLAY,),
                capabilities=("checkpoint", "images") if options.image_scale else ("checkpoint",),
            ),
        )
        self.reset(0)

    @property
    def descriptor(self) -> GameDescriptor:
        """Gymnasium descriptor: vocabulary = the environment's action names."""
        return self._descriptor

    def reset(self, seed: int) -> None:
        """``env.reset(seed=seed)``; the seed must fix the trajectory (``assert_reproducible``)."""
        if not 0 <= seed <= MAX_SEED:
            raise TargetError(f"seed {seed} is outside 0..{MAX_SEED}")
        self._obs, info = self._env.reset(seed=seed)
        self._info: Mapping[str, Any] = info
        self._seed = seed
        self._inputs: list[int] = []
        self._score = 0
        self._reward = 0
        self._terminated = self._truncated = False
        self._cached: Evidence | None = None

    def step(self, word: str) -> None:
        """Apply the named action; ``noop``, unknown words and steps after the end do nothing."""
        action = self._actions.get(word)
        if action is None or self._terminated or self._truncated:
            return
        self._apply(action)
        self._inputs.append(action)

    def _apply(self, action: int) -> None:
        obs, reward, terminated, truncated, info = self._env.step(action)
        self._obs, self._info = obs, info
        scaled = _scaled(reward, self._options.scale)
        if scaled is None:
            raise TargetError(f"{self._descriptor.id} returned the non-finite reward {reward}")
        self._reward = scaled
        self._score += scaled
        self._terminated, self._truncated = bool(terminated), bool(truncated)
        self._cached = None

    def evidence(self) -> Evidence:
        """Score, last reward, steps, end flags, observation numbers, info numbers, obs hash."""
        if self._cached is not None:
            return self._cached
        obs = self._obs if isinstance(self._obs, np.ndarray) else np.asarray(self._obs)
        scale = self._options.scale
        engine: dict[str, int] = {
            "score": self._score,
            "reward": self._reward,
            "steps": len(self._inputs),
            "terminated": int(self._terminated),
            "truncated": int(self._truncated),
        }
        if self._discrete_obs:
            engine["obs"] = int(obs)
        elif self._obs_keys:
            values = obs.ravel().tolist()
            try:
                # round() is half-to-even; plain Python beats numpy on a handful of numbers.
                engine.update(zip(self._obs_keys, [round(v * scale) for v in values], strict=True))
            except (OverflowError, ValueError):  # a non-finite component is left out
                for key, value in zip(self._obs_keys, values, strict=True):
                    number = _scaled(value, scale)
                    if number is not None:
                        engine[key] = number
        if self._info:
            self._add_info(engine, scale)
        self._cached = Evidence(
            engine=engine,
            frame_hash=hashlib.sha256(np.ascontiguousarray(obs).data).hexdigest(),
        )
        return self._cached

    def _add_info(self, engine: dict[str, int], scale: int) -> None:
        added = 0
        for key in sorted(self._info):
            if added == MAX_INFO_KEYS:
                break
            value = self._info[key]
            if isinstance(value, np.ndarray) and value.shape == ():
                value = value.item()
            if isinstance(value, bool | np.bool_):
                number: int | None = int(value)
            elif isinstance(value, int | float | np.integer | np.floating):
                number = _scaled(float(value), scale)
            else:
                continue
            if number is not None:
                engine[f"info_{_KEY.sub('_', str(key).lower())[:60]}"] = number
                added += 1

    def _text(self) -> str:
        if self._render_mode == "ansi":
            rendered = self._env.render()
            if isinstance(rendered, str):
                return _plain_ansi(rendered)
        obs = np.asarray(self._obs)
        if obs.dtype == np.uint8 and obs.ndim == 3 and obs.shape[2] == 3:
            return shade_text(obs)
        if obs.size > _MAX_TEXT_NUMBERS:
            return f"observation: array of shape {list(obs.shape)}"
        numbers = " ".join(
            f"{v:.4g}" if isinstance(v, float) else str(v) for v in obs.ravel().tolist()
        )
        return f"observation: {numbers}"

    def observe(self) -> Observation:
        """The ``ansi`` rendering (or the observation as text), the score, and frames when on."""
        summary = f"score {self._score / self._options.scale:g}"
        if self._terminated or self._truncated:
            summary += " | episode over"
        images: tuple[Image, ...] = ()
        if self._options.image_scale:
            frame = np.asarray(self._env.render(), dtype=np.uint8)
            images = (png_image(frame, scale=self._options.image_scale, label="screen"),)
        return Observation(text=f"{self._text()}\n{summary}", images=images)

    def over(self) -> bool:
        """True once the environment terminated or was truncated."""
        return self._terminated or self._truncated

    def checkpoint(self) -> bytes:
        """The seed and every applied action, sealed to this build (restore replays them)."""
        payload = canonical_json({"seed": self._seed, "actions": self._inputs})
        if len(payload) > MAX_CHECKPOINT_BYTES - 4096:
            raise CheckpointError(f"episode too long to checkpoint ({len(self._inputs)} actions)")
        return seal(payload, kind="gym", build=self._descriptor.build.digest)

    def restore(self, blob: bytes) -> None:
        """Reset with the checkpoint's seed and replay its actions."""
        payload = unseal(
            blob, kind="gym", build=self._descriptor.build.digest, limit=MAX_CHECKPOINT_BYTES
        )
        try:
            data = parse_json(payload, limit=MAX_CHECKPOINT_BYTES, what="gym checkpoint")
            seed, actions = data["seed"], data["actions"]
            valid = set(self._actions.values())
            if not (isinstance(seed, int) and isinstance(actions, list)):
                raise TypeError("seed or actions of the wrong type")
            if not all(isinstance(a, int) and a in valid for a in actions):
                raise ValueError("an action outside the action space")
        except (FormatError, KeyError, TypeError, ValueError) as exc:
            raise CheckpointError(f"gym checkpoint payload is malformed: {exc}") from exc
        self.reset(seed)
        for action in actions:
            if self._terminated or self._truncated:
                raise CheckpointError("gym checkpoint replays past the end of its episode")
            self._apply(action)
            self._inputs.append(action)

    def close(self) -> None:
        """Close the environment (idempotent)."""
        self._env.close()
