"""Gymnasium environments with a Discrete action space (install ``playproof[gym]``).

One word per action (names from the environment, a table of well-known
environments, or the ``action_names`` option); ``noop`` and unknown words do
not step. Evidence ``engine``: ``score`` (cumulative reward x ``scale``),
``reward`` (last reward x ``scale``), ``steps`` (actions applied, evidence
only), ``terminated``/``truncated`` (0/1), ``obs`` (a Discrete observation)
or ``obs_<i>`` (components of a small Box observation x ``scale``) and
``info_<key>`` (numeric info x ``scale``, booleans 0/1); ``frame_hash`` is the
SHA-256 of the observation array's bytes. Checkpoints store the seed and the
applied actions; restore replays them.

>>> game = make_game(env_id="FrozenLake-v1", kwargs={"is_slippery": False})
>>> game.descriptor.vocabulary
('left', 'down', 'right', 'up')
>>> game.reset(0); game.step("right"); game.step("noop"); game.evidence().engine["obs"]
1
"""

from __future__ import annotations

from typing import Any

from playproof.adapters.gym._game import ADAPTER_VERSION, GymGame
from playproof.adapters.gym._options import DEFAULT_SCALE, GymOptions
from playproof.adapters.gym._reproducible import assert_reproducible

__all__ = [
    "ADAPTER_VERSION",
    "DEFAULT_SCALE",
    "GymGame",
    "GymOptions",
    "assert_reproducible",
    "make_game",
]


def make_game(**options: Any) -> GymGame:
    """Build a Gymnasium session from JSON options (see :class:`GymOptions`)."""
    return GymGame(GymOptions.parse(options))
