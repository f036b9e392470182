"""Transparency log commands: ``log verify inclusion`` and ``log verify consistency``.

Both work offline on files: signed tree heads, a proof document and the
log's public key. Exit 0 when the proof holds, 1 when it does not (the step
that failed is named on one line), 3 when a file is missing, too large or
not the document it should be.

Importing this module registers them on :data:`playproof.cli._app.app`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from playproof._bounded import read_bounded
from playproof.cli._app import EXIT_ERROR, EXIT_REJECTED, _emit, _wants_json, app
from playproof.cli._output import console, line, say_error, styled
from playproof.errors import SigningKeyError
from playproof.sign import MAX_ENVELOPE_BYTES, MAX_KEY_FILE_BYTES, VerifyingKey
from playproof.transparency import (
    DOCUMENT_STEPS,
    MAX_PROOF_BYTES,
    MAX_TREE_HEAD_BYTES,
    ProofResult,
    check_consistency,
    check_inclusion,
    record_document_digest,
)

__all__ = ["log_app", "verify_app"]

log_app = typer.Typer(help="The transparency log of verified runs.", no_args_is_help=True)
verify_app = typer.Typer(
    help="Check log proofs offline, against signed tree heads and the log key.",
    short_help="Check log proofs offline.",
    no_args_is_help=True,
)
app.add_typer(log_app, name="log")
log_app.add_typer(verify_app, name="verify")

JsonFlag = Annotated[bool, typer.Option("--json", help="Print machine-readable JSON.")]
LogKey = Annotated[
    Path, typer.Option("--log-key", help="The log's public key (PEM) that signs its tree heads.")
]
ProofFile = Annotated[Path, typer.Option("--proof", help="The proof document (JSON).")]


def _log_key(path: Path) -> VerifyingKey:
    data = read_bounded(path, MAX_KEY_FILE_BYTES, "log key file", SigningKeyError)
    try:
        return VerifyingKey.from_pem(data)
    except SigningKeyError as exc:
        raise SigningKeyError(f"{path}: {exc}") from exc


def _report(kind: str, result: ProofResult, json_output: bool, extra: dict[str, Any]) -> None:
    """Print the outcome and leave with its exit code (a document that does not parse: 3)."""
    bad_input = not result.valid and result.failed_step in DOCUMENT_STEPS
    if _wants_json(json_output):
        _emit({"proof": kind, **result.model_dump(mode="json"), **extra})
    elif bad_input:
        say_error("error", f"{result.failed_step}: {result.reason}")
    elif result.valid:
        console.print(
            line(styled(f"{kind} proof holds", "green"), ": ", result.reason), soft_wrap=True
        )
    else:
        console.print(
            line(
                styled(f"{kind} proof FAILED", "red"), f" at {result.failed_step}: ", result.reason
            ),
            soft_wrap=True,
        )
    if bad_input:
        raise typer.Exit(EXIT_ERROR)
    if not result.valid:
        raise typer.Exit(EXIT_REJECTED)


@verify_app.command("inclusion")
def inclusion(
    head: Annotated[Path, typer.Option("--head", help="The signed tree head (JSON).")],
    proof: ProofFile,
    log_key: LogKey,
    leaf_digest: Annotated[
        str | None,
        typer.Option(
            "--leaf-digest", metavar="HEX", help="The run record digest (64 hex) the leaf holds."
        ),
    ] = None,
    record: Annotated[
        Path | None,
        typer.Option("--record", help="A signed (or bare) run record whose digest to look for."),
    ] = None,
    json_output: JsonFlag = False,
) -> None:
    """Check a run record is in the log.

    The proof must lead from the record's leaf to the root of the signed tree
    head. Give the record by its digest (--leaf-digest) or as a file (--record); the
    record's own signature is not checked here (playproof verify does that).
    """
    if (leaf_digest is None) == (record is None):
        raise typer.BadParameter("give exactly one of --leaf-digest HEX and --record FILE")
    key = _log_key(log_key)
    head_data = read_bounded(head, MAX_TREE_HEAD_BYTES, "tree head file")
    proof_data = read_bounded(proof, MAX_PROOF_BYTES, "proof file")
    digest = (
        record_document_digest(read_bounded(record, MAX_ENVELOPE_BYTES, "record file"))
        if record is not None
        else str(leaf_digest)
    )
    result = check_inclusion(head_data, proof_data, digest, key)
    _report("inclusion", result, json_output, {"record_digest": digest})


@verify_app.command("consistency")
def consistency(
    old: Annotated[Path, typer.Option("--old", help="The earlier signed tree head (JSON).")],
    new: Annotated[Path, typer.Option("--new", help="The later signed tree head (JSON).")],
    proof: ProofFile,
    log_key: LogKey,
    json_output: JsonFlag = False,
) -> None:
    """Check the log only appended between two tree heads.

    The proof must show the tree of the old signed head is a prefix of the tree
    of the new one: nothing removed, reordered or rewritten.
    """
    key = _log_key(log_key)
    old_data = read_bounded(old, MAX_TREE_HEAD_BYTES, "old tree head file")
    new_data = read_bounded(new, MAX_TREE_HEAD_BYTES, "new tree head file")
    proof_data = read_bounded(proof, MAX_PROOF_BYTES, "proof file")
    result = check_consistency(old_data, new_data, proof_data, key)
    _report("consistency", result, json_output, {})
