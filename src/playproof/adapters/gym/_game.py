"""A session over any registered Gymnasium environment with a Discrete action space."""

from __future__ import annotations

import functools
import importlib
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

import gymnasium
import numpy as np
from gymnasium import spaces
from gymnasium.envs.registration import load_env_creator

from playproof.adapters.gym._evidence import (
    ALL_PARTS,
    MAX_INFO_KEYS,
    MAX_OBSERVATION_CHANNELS,
    NO_PARTS,
    EvidenceParts,
    add_info,
    add_observation,
    base_numbers,
    observation_hash,
    parts_read,
)
from playproof.adapters.gym._names import action_names
from playproof.adapters.gym._options import GymOptions
from playproof.adapters.options import check_seed, replay_platform
from playproof.adapters.screen import png_image, shade_text
from playproof.adapters.sealed import seal, unseal
from playproof.core.canonical import canonical_json, digest, parse_json
from playproof.core.contract import Contract
from playproof.core.evidence import Evidence
from playproof.core.game import (
    BuildIdentity,
    GameDescriptor,
    ReplayResult,
)
from playproof.core.observation import Image, Observation
from playproof.core.tracker import MilestoneTracker
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
_MAX_TEXT_NUMBERS = 64
_OBSERVATION_SPACES = (spaces.Box, spaces.Discrete, spaces.MultiBinary, spaces.MultiDiscrete)
# ANSI SGR sequences: a highlighted span (non-reset code ... reset) becomes [span].
_HIGHLIGHT = re.compile(r"\x1b\[(?!0?m)[0-9;]*m(.*?)\x1b\[0?m", re.DOTALL)
_ANY_ESCAPE = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


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


class GymGame:
    """A Gymnasium session (see :mod:`playproof.adapters.gym` for the evidence it records)."""

    def __init__(self, options: GymOptions) -> None:
        self._options = options
        self._scale = options.scale
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
            platform=replay_platform("gym", images=bool(options.image_scale)),
        )
        self.reset(0)

    @property
    def descriptor(self) -> GameDescriptor:
        """Gymnasium descriptor: vocabulary = the environment's action names."""
        return self._descriptor

    def reset(self, seed: int) -> None:
        """``env.reset(seed=seed)``; the seed must fix the trajectory (``assert_reproducible``)."""
        check_seed(seed)
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

    def _apply(self, action: int) -> None:
        obs, reward, terminated, truncated, info = self._env.step(action)
        self._obs, self._info = obs, info
        number = float(reward)
        if not math.isfinite(number):
            raise TargetError(f"{self._descriptor.id} returned the non-finite reward {reward}")
        scaled_reward = round(number * self._scale)
        self._reward = scaled_reward
        self._score += scaled_reward
        self._terminated, self._truncated = bool(terminated), bool(truncated)
        self._inputs.append(action)
        self._cached = None

    def evidence(self) -> Evidence:
        """Score, last reward, steps, end flags, observation numbers, info numbers, obs hash."""
        if self._cached is None:
            self._cached = self._snapshot(ALL_PARTS)
        return self._cached

    def _snapshot(self, parts: EvidenceParts) -> Evidence:
        """The evidence of the current state, with only the optional ``parts`` computed."""
        engine = base_numbers(
            self._score, self._reward, len(self._inputs), self._terminated, self._truncated
        )
        obs = self._obs if isinstance(self._obs, np.ndarray) else np.asarray(self._obs)
        if parts.observation:
            add_observation(engine, obs, self._obs_keys, self._discrete_obs, self._scale)
        if parts.info and self._info:
            add_info(engine, self._info, self._scale)
        return Evidence(
            engine=engine, frame_hash=observation_hash(obs) if parts.frame_hash else None
        )

    def replay(
        self, seed: int, inputs: Sequence[str], contract: Contract, *, trace: bool = False
    ) -> ReplayResult:
        """Exactly what ``replay_in_session`` returns, computing only what it needs.

        Without ``trace`` the tracker gets evidence holding just the numbers the
        contract reads, and none once every milestone has passed; an unknown word
        changes nothing (a tracker learns nothing from a repeated snapshot), and
        nothing steps after the episode ended.
        """
        tracker = MilestoneTracker(contract)
        self.reset(seed)
        parts = ALL_PARTS if trace else parts_read(contract)
        if parts == NO_PARTS:
            over_at = self._replay_base(inputs, tracker)
            return ReplayResult(verified=tracker.verified, turns=len(inputs), over_at=over_at)
        read = self.evidence if parts == ALL_PARTS else functools.partial(self._snapshot, parts)
        evidence = read()
        snapshots = [evidence] if trace else None
        tracker.observe(evidence, 0)
        over_at = None  # reset never ends an episode
        actions, apply, observe = self._actions, self._apply, tracker.observe
        tracking = not tracker.complete or trace
        for turn, word in enumerate(inputs, start=1):
            action = actions.get(word)
            if action is not None:
                apply(action)
                if tracking:
                    evidence = read()
                    if observe(evidence, turn) and tracker.complete and not trace:
                        tracking = False  # nothing is left to earn: the rest only steps
                if self._terminated or self._truncated:
                    over_at = turn
                    break
            if snapshots is not None:
                snapshots.append(evidence)
        if snapshots is not None:  # every snapshot after the end repeats the last one
            snapshots.extend([evidence] * (len(inputs) + 1 - len(snapshots)))
        return ReplayResult(
            verified=tracker.verified,
            turns=len(inputs),
            over_at=over_at,
            trace=tuple(snapshots) if snapshots is not None else None,
        )

    def _replay_base(self, inputs: Sequence[str], tracker: MilestoneTracker) -> int | None:
        """Replay's loop for a contract that reads only the base numbers; returns ``over_at``.

        It does per input what ``_apply`` and a base-only snapshot do, with the
        numbers in locals instead of attributes (attribute traffic and method
        calls cost as much as the evidence itself here); the session state is
        written back at the end.
        """
        env_step, actions, applied, scale = self._env.step, self._actions, self._inputs, self._scale
        observe = tracker.observe
        obs, info, score, reward = self._obs, self._info, self._score, self._reward
        terminated = truncated = False
        over_at: int | None = None
        observe(Evidence(engine=base_numbers(score, reward, len(applied), False, False)), 0)
        tracking = not tracker.complete
        try:
            for turn, word in enumerate(inputs, start=1):
                action = actions.get(word)
                if action is None:
                    continue  # a no-op leaves the snapshot, so the tracker learns nothing
                obs, raw_reward, ended, cut, info = env_step(action)
                number = float(raw_reward)
                if not math.isfinite(number):
                    raise TargetError(
                        f"{self._descriptor.id} returned the non-finite reward {raw_reward}"
                    )
                reward = round(number * scale)
                score += reward
                terminated, truncated = bool(ended), bool(cut)
                applied.append(action)
                if tracking:
                    engine = base_numbers(score, reward, len(applied), terminated, truncated)
                    if observe(Evidence(engine=engine), turn) and tracker.complete:
                        tracking = False  # nothing is left to earn: the rest only steps
                if terminated or truncated:
                    over_at = turn
                    break
        finally:
            self._obs, self._info, self._reward, self._score = obs, info, reward, score
            self._terminated, self._truncated = terminated, truncated
            self._cached = None
        return over_at

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
        summary = f"score {self._score / self._scale:g}"
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

    def close(self) -> None:
        """Close the environment (idempotent)."""
        self._env.close()
