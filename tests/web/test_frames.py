"""Replay frames regenerated from a record, without a browser or a server."""

from __future__ import annotations

import base64
import hashlib
from pathlib import Path

import pytest

pytest.importorskip("jinja2", reason="the web pages need the server extra")

import playproof
from playproof.core.record import ClaimedMilestone, RunRecord
from playproof.errors import PlayproofError
from playproof.service.web import frames as frames_module
from playproof.service.web.frames import (
    FRAME_IMAGE_SCALE,
    FrameUnavailable,
    cached_events,
    cached_index,
    ensure_frames,
    frame_name,
    generate_frames,
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


def _local_frames(record: RunRecord, turns: int) -> list[bytes]:
    """The screens a plain local replay shows after turns 0..turns (as the adapter encodes them)."""
    game = playproof.get_target(record.target.name or "").open(image_scale=FRAME_IMAGE_SCALE)
    try:
        game.reset(record.seed)
        frames = [base64.b64decode(game.observe().images[0].data)]
        for word in record.inputs[:turns]:
            game.step(word)
            frames.append(base64.b64decode(game.observe().images[0].data))
    finally:
        game.close()
    return frames


def test_repeated_screens_are_encoded_once_and_every_frame_is_the_local_one(
    tmp_path: Path,
) -> None:
    try:
        playproof.get_target("pyboy/pp-collect").open().close()
    except PlayproofError:
        pytest.skip("pyboy is not installed: pip install 'playproof[pyboy]'")
    record = playproof.run(
        "pyboy/pp-collect",
        playproof.BaselineDriver("random-walk"),
        max_turns=80,
        stop_at_game_over=False,
    )
    index = generate_frames(record, "12" * 32, tmp_path / ("12" * 32))
    files = [tmp_path / ("12" * 32) / frame_name(t, "image") for t in range(index.turns + 1)]
    # The walk comes back to screens it showed before: those turns are links to one file.
    assert any(path.stat().st_nlink > 1 for path in files)
    local = _local_frames(record, index.turns)
    served = [read_frame(tmp_path, index, turn) for turn in range(index.turns + 1)]
    assert [hashlib.sha256(f).hexdigest() for f in served] == [
        hashlib.sha256(f).hexdigest() for f in local
    ]


def test_a_target_whose_frame_hash_is_not_its_screen_encodes_every_frame(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    try:
        playproof.get_target("pyboy/pp-collect").open().close()
    except PlayproofError:
        pytest.skip("pyboy is not installed: pip install 'playproof[pyboy]'")
    record = playproof.run(
        "pyboy/pp-collect",
        playproof.BaselineDriver("random-walk"),
        max_turns=80,
        stop_at_game_over=False,
    )

    def links(folder: Path) -> int:
        index = generate_frames(record, "34" * 32, folder)
        return sum(
            (folder / frame_name(turn, "image")).stat().st_nlink > 1
            for turn in range(index.turns + 1)
        )

    assert links(tmp_path / "listed") > 0
    monkeypatch.setattr(frames_module, "SCREEN_HASHING_FAMILIES", frozenset())
    assert links(tmp_path / "unlisted") == 0


SWAP_LINES = (
    "quote USDC JUP 300",
    "swap USDC JUP 300 100",
    "swap USDC JUP 999 100",
    "buy moon",
    "finish",
    "wait",
)


@pytest.fixture(scope="module")
def swap_record() -> RunRecord:
    pytest.importorskip("solders", reason="the Solana world needs the solana extra")
    from playproof.drivers import ScriptedDriver

    target = playproof.get_target("solana/swap")
    return playproof.run(target, ScriptedDriver(list(SWAP_LINES)), max_turns=len(SWAP_LINES))


def test_a_policy_bound_run_is_shown_as_text_with_its_replayed_events(
    swap_record: RunRecord, tmp_path: Path
) -> None:
    index = ensure_frames(tmp_path, swap_record, "56" * 32)
    assert index.kind == "text"
    assert index.events
    events = cached_events(tmp_path, "56" * 32)
    assert events is not None
    from playproof.policy.replay import replay_events

    game = playproof.get_target("solana/swap").open()
    try:
        assert events == replay_events(game, swap_record.seed, swap_record.inputs)
    finally:
        game.close()


def test_a_cache_entry_without_events_is_made_again_when_events_are_needed(
    swap_record: RunRecord, tmp_path: Path
) -> None:
    digest = "78" * 32
    index = ensure_frames(tmp_path, swap_record, digest)
    (tmp_path / digest / "events.json").unlink()
    old = index.model_copy(update={"events": False})
    (tmp_path / digest / "index.json").write_text(old.model_dump_json(), encoding="utf-8")
    assert ensure_frames(tmp_path, swap_record, digest).events is False
    assert ensure_frames(tmp_path, swap_record, digest, need_events=True).events is True
    assert cached_events(tmp_path, digest) is not None


def test_a_target_this_server_cannot_open_gets_no_frames_not_a_crash(
    record: RunRecord, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from playproof.errors import TargetError
    from playproof.targets import Target

    def missing(self: Target, **_: object) -> None:
        raise TargetError(f"target {self.name} needs a library that is not installed")

    monkeypatch.setattr(Target, "open", missing)
    with pytest.raises(FrameUnavailable, match="not installed"):
        ensure_frames(tmp_path, record, "9a" * 32)
