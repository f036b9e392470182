"""The rollback guard: a resume refuses a ledger older than (or diverging from) the last save."""

import json
import shutil
import stat
import tempfile
from pathlib import Path

import pytest
from campaigns import CONTRACT, KEY, Walker, campaign, continuous, same_run
from hypothesis import given, settings
from hypothesis import strategies as st
from toygame import ToyGame

from playproof.engine import (
    CampaignState,
    Ledger,
    SegmentReport,
    _campaign,
    load_ledger,
    save_ledger,
)
from playproof.engine._guard import (
    MAX_CAMPAIGN_STATE_BYTES,
    hold_campaign,
    read_state,
    rollback_problems,
    state_of,
)
from playproof.errors import LedgerError, RunError
from playproof.sign import SigningKey
from playproof.verify import attest


def _state_file(guard: Path) -> Path:
    """The one state file in the guard folder."""
    files = sorted(guard.glob("*.json"))
    assert len(files) == 1, files
    return files[0]


def _state(guard: Path) -> CampaignState:
    return CampaignState.model_validate_json(_state_file(guard).read_bytes(), strict=True)


def test_an_older_copy_of_the_ledger_put_back_is_refused(tmp_path: Path) -> None:
    path, guard = tmp_path / "l.json", tmp_path / "keys" / "campaigns"
    assert campaign(Walker(), path, segments=1, guard=guard).status == "paused"
    shutil.copy(path, tmp_path / "old.json")
    campaign(Walker(), path, segments=2, guard=guard)
    assert _state(guard).decisions == 21
    shutil.copy(tmp_path / "old.json", path)
    with pytest.raises(LedgerError) as caught:
        campaign(Walker(), path, guard=guard)
    message = str(caught.value)
    assert "older than the campaign's last save" in message
    assert "it holds 7 decisions in 1 segment" in message
    assert "held 21 decisions in 3 segments" in message
    assert "resume from the campaign's latest ledger" in message
    # Nothing was played or saved: the ledger and the note are as they were.
    assert (tmp_path / "old.json").read_bytes() == path.read_bytes()
    assert _state(guard).decisions == 21


def test_a_ledger_saved_before_the_hooks_answered_is_refused(tmp_path: Path) -> None:
    path, guard, old = tmp_path / "l.json", tmp_path / "guard", tmp_path / "old.json"

    def analyst(report: SegmentReport) -> None:
        # Asked once the segment is saved: the copy is the save before the answer.
        shutil.copy(path, old)

    campaign(Walker(), path, segments=1, guard=guard, analyst=analyst)
    assert not load_ledger(old, KEY.verifying_key).segments[0].consulted
    assert _state(guard).consulted
    shutil.copy(old, path)
    with pytest.raises(LedgerError, match="saved before the hooks answered after segment 0"):
        campaign(Walker(), path, guard=guard)


def test_a_ledger_played_on_from_an_older_copy_diverges(tmp_path: Path) -> None:
    path, guard = tmp_path / "l.json", tmp_path / "guard"
    campaign(Walker(), path, segments=1, guard=guard)
    shutil.copy(path, tmp_path / "old.json")
    campaign(Walker(), path, segments=1, guard=guard)
    # The old copy is played on without the guard, by a driver whose costs differ.
    shutil.copy(tmp_path / "old.json", path)
    campaign(Walker(cost=0.02), path, segments=2)
    assert len(load_ledger(path, KEY.verifying_key).decisions) == 21
    with pytest.raises(LedgerError, match="diverges from the campaign's last save"):
        campaign(Walker(cost=0.02), path, guard=guard)


def test_a_ledger_ahead_of_the_note_is_accepted_and_noted(tmp_path: Path) -> None:
    # As after a crash between the ledger's save and the note's write.
    path, guard = tmp_path / "l.json", tmp_path / "guard"
    campaign(Walker(), path, segments=1, guard=guard)
    older = _state_file(guard).read_bytes()
    campaign(Walker(), path, segments=2, guard=guard)
    _state_file(guard).write_bytes(older)
    assert _state(guard).decisions == 7
    result = campaign(Walker(), path, guard=guard)
    assert result.record is not None
    same_run(result.record, continuous(Walker()))
    assert attest(result.record, ToyGame(), CONTRACT).clean
    assert _state(guard) == state_of(load_ledger(path, KEY.verifying_key), KEY.key_id)


def test_a_campaign_without_a_note_resumes_and_is_guarded_from_then_on(tmp_path: Path) -> None:
    path, guard = tmp_path / "l.json", tmp_path / "guard"
    campaign(Walker(), path, segments=1)  # before the guard existed
    shutil.copy(path, tmp_path / "old.json")
    campaign(Walker(), path, segments=1)
    assert not guard.exists()
    # The resume notes the ledger it adopted before it plays anything.
    assert campaign(Walker(), path, segments=0, guard=guard).status == "paused"
    assert _state(guard).decisions == 14
    shutil.copy(tmp_path / "old.json", path)
    with pytest.raises(LedgerError, match="older than the campaign's last save"):
        campaign(Walker(), path, guard=guard)


def test_pause_and_resume_with_the_guard_ends_in_a_record_that_verifies(tmp_path: Path) -> None:
    path, guard = tmp_path / "l.json", tmp_path / "keys" / "campaigns"
    calls = 0
    while True:
        result = campaign(Walker(), path, segments=1, guard=guard)
        calls += 1
        ledger = load_ledger(path, KEY.verifying_key)
        assert _state(guard) == state_of(ledger, KEY.key_id)
        if result.status == "finished":
            break
    assert calls == 5
    assert result.record is not None
    same_run(result.record, continuous(Walker()))
    assert attest(result.record, ToyGame(), CONTRACT).clean
    assert stat.S_IMODE(guard.stat().st_mode) == 0o700
    assert stat.S_IMODE(_state_file(guard).stat().st_mode) == 0o600
    # A finished campaign resumed gives back its record, guard or not.
    again = campaign(Walker(), path, guard=guard)
    assert again.record is not None
    assert again.record.to_json() == result.record.to_json()


def test_two_copies_of_one_campaign_cannot_play_at_once(tmp_path: Path) -> None:
    path, guard = tmp_path / "l.json", tmp_path / "guard"
    campaign(Walker(), path, segments=1, guard=guard)
    copy = tmp_path / "copy.json"
    shutil.copy(path, copy)
    ident = _state(guard).campaign
    refused = pytest.raises(LedgerError, match="another call is playing the same campaign")
    with hold_campaign(guard, ident, str(path)), refused:
        campaign(Walker(), copy, guard=guard)
    # Released: the copy (as new as the note) resumes.
    assert campaign(Walker(), copy, segments=1, guard=guard).status == "paused"


def _valid_state(guard: Path) -> dict[str, object]:
    loaded: dict[str, object] = json.loads(_state_file(guard).read_bytes())
    return loaded


@pytest.mark.parametrize(
    ("spoil", "expected"),
    [
        (lambda f, s: f.write_bytes(b"{not json"), "is malformed"),
        (lambda f, s: f.write_bytes(b""), "is malformed"),
        (lambda f, s: f.write_bytes(b" " * (MAX_CAMPAIGN_STATE_BYTES + 1)), "over"),
        (lambda f, s: f.write_text(json.dumps({**s, "decisions": "7"})), "is malformed"),
        (lambda f, s: f.write_text(json.dumps({**s, "extra": 1})), "is malformed"),
        (lambda f, s: f.write_text(json.dumps({**s, "decisions": 0})), "cannot fill"),
        (lambda f, s: f.write_text(json.dumps({**s, "campaign": "0" * 64})), "names campaign"),
        (lambda f, s: f.write_text(json.dumps(s)[:-1] + ',"decisions":99}'), "repeats the key"),
        (lambda f, s: (f.unlink(), f.mkdir()), "a folder"),
    ],
)
def test_a_spoiled_note_is_a_ledger_error(tmp_path: Path, spoil: object, expected: str) -> None:
    path, guard = tmp_path / "l.json", tmp_path / "guard"
    campaign(Walker(), path, segments=1, guard=guard)
    state_file = _state_file(guard)
    spoil(state_file, _valid_state(guard))  # type: ignore[operator]
    with pytest.raises(LedgerError, match=expected) as caught:
        campaign(Walker(), path, guard=guard)
    assert str(state_file) in str(caught.value)


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=600) | st.text(max_size=300).map(str.encode))
def test_reading_any_note_gives_a_state_none_or_a_ledger_error(data: bytes) -> None:
    campaign_id = "a" * 64
    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / f"{campaign_id}.json").write_bytes(data)
        try:
            state = read_state(Path(folder), campaign_id, "l.json")
        except LedgerError:
            return
        assert state is not None
        assert state.campaign == campaign_id


def _saves(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[Ledger]:
    """Every save of one campaign, in turn: after each segment and after each hooks' answer."""
    saves: list[Ledger] = []

    def save(ledger: Ledger, path: Path, key: SigningKey) -> Path:
        saves.append(ledger)
        return save_ledger(ledger, path, key)

    monkeypatch.setattr(_campaign, "save_ledger", save)
    assert campaign(Walker(), tmp_path / "l.json").status == "finished"
    return saves


def test_a_save_extends_exactly_the_saves_before_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    saves = _saves(tmp_path, monkeypatch)
    assert len(saves) == 9
    states = [state_of(ledger, KEY.key_id) for ledger in saves]
    assert len({s.campaign for s in states}) == 1
    for noted, state in enumerate(states):
        for resumed, ledger in enumerate(saves):
            problems = rollback_problems(ledger, state)
            assert (problems == []) == (resumed >= noted), (noted, resumed, problems)


def test_a_guard_without_a_ledger_file_is_refused() -> None:
    with pytest.raises(RunError, match="guard notes the saves of a ledger file"):
        campaign(Walker(), None, guard=Path("unused"))
