"""Replay frames regenerated from a record, without a browser or a server."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("jinja2", reason="the web pages need the server extra")

import playproof
from playproof.core.record import ClaimedMilestone, RunRecord
from playproof.service.web.frames import (
    FrameUnavailable,
    cached_index,
    ensure_frames,
    read_frame,
)


@pytest.fixture(scope="module")
def record() -> RunRecord:
    return playproof.run("native/2048", playproof.BaselineDriver("round-robin"), max_turns=25)


def test_frames_are_the_text_a_player_saw(record: RunRecord, tmp_path: Path) -> None:
    index = ensure_frames(tmp_path, record, "ab" * 32)
    assert index.kind == "text"
    assert index.turns == len(record.decisions)
    assert [(m.id, m.turn) for m in index.verified] == [(c.id, c.turn) for c in record.claimed]
    assert index.diverged_at is None
    game = playproof.get_target("native/2048").open()
    game.reset(record.seed)
    for word in record.inputs[:7]:
        game.step(word)
    assert read_frame(tmp_path, index, 7).decode() == game.observe().text
    assert cached_index(tmp_path, "ab" * 32) == index


def test_a_moved_claim_is_where_replay_diverges(record: RunRecord, tmp_path: Path) -> None:
    last = record.claimed[-1]
    moved = record.model_copy(
        update={"claimed": (*record.claimed[:-1], ClaimedMilestone(id=last.id, turn=last.turn + 2))}
    )
    index = ensure_frames(tmp_path, moved, "cd" * 32)
    assert index.diverged_at == last.turn
    assert index.divergence is not None
    assert last.id in index.divergence


def test_a_record_of_another_build_gets_no_frames(record: RunRecord, tmp_path: Path) -> None:
    other = record.model_copy(
        update={"target": record.target.model_copy(update={"build_digest": "0" * 64})}
    )
    with pytest.raises(FrameUnavailable, match="build"):
        ensure_frames(tmp_path, other, "ef" * 32)
    assert not any(tmp_path.iterdir())
