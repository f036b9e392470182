"""Shared pieces of the campaign and ledger tests: a counting contract, a driver, runners, keys."""

import asyncio
import base64
import hashlib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from toygame import ToyGame

from playproof.core.agent import Action, DecisionContext, HistoryEntry
from playproof.core.contract import parse_contract
from playproof.core.observation import Observation
from playproof.core.record import RunRecord
from playproof.engine import CampaignResult, EpisodeConfig, play, run_campaign
from playproof.engine._ledger import LEDGER_SIGNING_CONTEXT
from playproof.sign import SigningKey

KEY = SigningKey.generate()
"""The campaign key of the tests: signs every ledger :func:`campaign` saves."""

CONTRACT = parse_contract(
    {
        "game": "toy",
        "milestones": [
            {
                "id": f"c{n}",
                "requires": [f"c{n - 1}"] if n > 1 else [],
                "check": {"kind": "state", "key": "count", "op": ">=", "value": n},
            }
            for n in range(1, 6)
        ],
    }
)


class Walker:
    """Chooses from the observation and the history only; records the guidance it saw."""

    kind = "test"
    id = "walker"

    def __init__(self, cost: float = 0.01, interrupt_at: int | None = None) -> None:
        self.cost = cost
        self.guidance: dict[int, str | None] = {}
        self.interrupt_at = interrupt_at

    async def act(
        self, observation: Observation, history: Sequence[HistoryEntry], context: DecisionContext
    ) -> Action:
        self.guidance[context.turn] = context.guidance
        if context.turn == self.interrupt_at:
            raise KeyboardInterrupt
        count = int(observation.text.split()[1])
        word = ("inc", "inc", "dec", "wait")[(count + len(history)) % 4]
        return Action(word, self.cost)


def campaign(driver: Any, ledger: Path | None, **options: Any) -> CampaignResult:
    config = EpisodeConfig(
        max_turns=options.pop("max_turns", 30),
        budget_usd=options.pop("budget_usd", None),
        history=3,
        guidance=options.pop("guidance", None),
    )
    segment_turns = options.pop("segment_turns", 7)
    return asyncio.run(
        run_campaign(
            ToyGame(),
            CONTRACT,
            driver,
            config,
            segment_turns=segment_turns,
            ledger=ledger,
            ledger_key=options.pop("ledger_key", KEY if ledger is not None else None),
            **options,
        )
    )


def signed_file(body: bytes, key: SigningKey = KEY) -> bytes:
    """A ledger file: ``body`` (a JSON object) with a signature member by ``key`` appended."""
    message = LEDGER_SIGNING_CONTEXT + hashlib.sha256(body).digest()
    sig = base64.b64encode(key.sign(message)).decode("ascii")
    member = f',"signature":{{"keyid":"{key.key_id}","sig":"{sig}"}}}}'
    return body[:-1] + member.encode("ascii")


def body_of(path: Path) -> bytes:
    """The file at ``path`` without its signature member (what the signature covers)."""
    data = path.read_bytes()
    return data[: data.rindex(b',"signature":')] + b"}"


def resign(path: Path, change: Callable[[bytes], bytes], key: SigningKey = KEY) -> None:
    """Rewrite the ledger's body with ``change`` and sign it again with ``key``."""
    path.write_bytes(signed_file(change(body_of(path)), key))


def continuous(driver: Any, **config: Any) -> RunRecord:
    base = {"max_turns": 30, "history": 3, **config}
    return asyncio.run(play(ToyGame(), CONTRACT, driver, EpisodeConfig(**base)))


def same_run(a: RunRecord, b: RunRecord) -> None:
    assert a.chain_head == b.chain_head
    assert a.inputs == b.inputs
    assert a.claimed == b.claimed
    assert a.accounting.spent_usd == b.accounting.spent_usd
    assert a.stop_reason == b.stop_reason
    assert len(a.decisions) == len(b.decisions)
