"""``playproof demo``: play, sign, verify, then show that tampering is caught."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.panel import Panel

from playproof._api import verify_signed
from playproof.cli._agents import AgentOptions
from playproof.cli._app import (
    KeyDir,
    _play,
    _print_record,
    _print_report,
    app,
)
from playproof.cli._files import (
    DEFAULT_KEY_DIR,
    check_key_dir,
    ensure_signing_key,
    write_document,
)
from playproof.cli._output import console, line, styled
from playproof.errors import PlayproofError
from playproof.sign import SigningKey, sign_record
from playproof.targets import get_target

__all__ = ["demo"]


def _edit_payload(envelope: dict[str, Any], edit: Any) -> dict[str, Any]:
    statement = json.loads(base64.b64decode(envelope["payload"]))
    edit(statement["predicate"])
    forged = dict(envelope)
    forged["payload"] = base64.b64encode(json.dumps(statement).encode()).decode()
    return forged


def _change_first_input(record: dict[str, Any]) -> None:
    """Replace the first input of a record (decisions as v2 columns) by another move."""
    inputs = record["decisions"]["inputs"]
    inputs[0] = "up" if inputs[0] != "up" else "down"


@app.command()
def demo(
    agent: Annotated[
        str, typer.Option("--agent", "-a", help="Agent to play with.")
    ] = "baseline:round-robin",
    out: Annotated[Path, typer.Option(help="Folder for the demo's records.")] = Path(
        "playproof-runs/demo"
    ),
    key_dir: KeyDir = DEFAULT_KEY_DIR,
) -> None:
    """Watch a built-in agent play 2048, sign the record, verify it, and catch two forgeries."""
    target = get_target("native/2048")
    console.print(
        Panel.fit(
            line(
                styled(f"1. {target.name}", "bold"),
                f": {target.spec.description}\n{target.spec.separation_note}",
            )
        )
    )
    check_key_dir(key_dir)
    record = _play(
        target,
        agent,
        seed=None,
        agent_seed=0,
        budget=None,
        max_turns=300,
        stop_at_game_over=True,
        mode=None,
        worker=None,
        options=AgentOptions(),
        quiet=False,
    )
    key, _ = ensure_signing_key(key_dir)
    envelope = sign_record(record, key).to_json()
    path = write_document(out / "2048-signed.json", envelope)
    _print_record(record, key.key_id, signature_checked=True)

    console.print(
        Panel.fit(
            line(styled("2. verify", "bold"), f" {path}: signature, then replay from seed + inputs")
        )
    )
    report = verify_signed(envelope, [key.verifying_key])
    _print_report(report)

    console.print(
        Panel.fit(
            line(styled("3. forgery A", "bold"), ": edit the first input inside the signed payload")
        )
    )
    edited = _edit_payload(envelope, _change_first_input)
    forged_a = verify_signed(edited, [key.verifying_key])
    _print_report(forged_a)

    console.print(
        Panel.fit(
            line(
                styled("4. forgery B", "bold"),
                ": claim an unearned milestone and re-sign with another key",
            )
        )
    )
    rogue = SigningKey.generate()
    bragged = record.model_copy(
        update={
            "claimed": (*record.claimed, record.claimed[0].model_copy(update={"id": "tile-256"}))
        }
    )
    forged_b = verify_signed(
        sign_record(bragged, rogue).to_json(), [key.verifying_key, rogue.verifying_key]
    )
    _print_report(forged_b)

    if not report.clean or forged_a.clean or forged_b.clean:
        raise PlayproofError("the demo's verification did not behave as expected")
    console.print(
        line(
            "\n",
            styled("demo complete", "bold green"),
            f": the honest record verified ({len(report.verified)} of {report.milestones_total} "
            "milestones reproduced by replay); both forgeries were rejected.",
        )
    )
