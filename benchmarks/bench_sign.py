"""Signing and checking run records per decision: the canonical fast path against the old path.

Builds ``native/2048`` records of 1,000, 10,000 and 100,000 decisions with the
engine and the random-walk baseline (no stop at game over), then measures in
the same run, per decision:

- ``bare sign``: SHA-256 of the record's canonical bytes and one Ed25519
  signature (the floor signing cannot go below);
- ``old sign``: the previous path (the record serialized twice by the
  reference RFC 8785 canonicalizer: once for its digest, once in the statement);
- ``sign``: :func:`playproof.sign.sign_record` (the record serialized once
  by the C-encoder fast path and spliced into the statement);
- ``old check`` and ``check``: the signature and subject checks (envelope
  parse, Ed25519 check, statement and record read, record digest), the old
  way (lenient reads, the record re-serialized from the model by the reference
  canonicalizer) and :func:`playproof.sign.verify_envelope`;
- ``bare verify``: the in-process replay of the record's inputs plus one
  SHA-256 of the record bytes, and ``verify``: the full
  :func:`playproof.verify_signed` (checks, then the same replay);
- ``v1 check`` and ``v1 verify``: the same record written in the first
  record form (one object per decision), checked and verified the same way.

Times are process CPU time, phases interleaved round by round, best round
kept. Targets: sign and check at most 3 µs per decision each, a full verify
at most 1.2x the bare replay plus hash, at most 60 bytes per decision in the
signed envelope (records are written as ``playproof/run/v2``; the v1 form of
the same record is shown beside it).

Last, child processes verify synthesized signed records of 100,000 and
1,000,000 decisions (latencies to four decimals, as the engine keeps them), in
both forms, with :func:`playproof.verify_signed` (signature, strict read,
digest, replay), and report their peak memory (VmHWM, else ``ru_maxrss``)
against the envelope's size. The larger ones exceed the 16 MiB bound on a
signed envelope, so each child raises that bound for its one file.

    python benchmarks/bench_sign.py [decisions ...]
"""

from __future__ import annotations

import gc
import hashlib
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

import rfc8785

import playproof
from playproof.adapters.native import Game2048
from playproof.core.canonical import canonical_json, parse_json
from playproof.core.record import RunRecord
from playproof.core.replay import replay
from playproof.drivers import BaselineDriver
from playproof.engine._loop import LATENCY_DECIMALS
from playproof.sign import (
    IN_TOTO_PAYLOAD_TYPE,
    RUN_PREDICATE_TYPE,
    SigningKey,
    Statement,
    VerifyingKey,
    make_statement,
    parse_envelope,
    sign_record,
    verify_envelope,
)
from playproof.sign import _dsse as dsse
from playproof.sign._dsse import sign_payload, signing_key_id
from playproof.targets import get_target

SIZES = (1_000, 10_000, 100_000)
Schema = Literal["playproof/run/v1", "playproof/run/v2"]
SCHEMAS: tuple[Schema, ...] = ("playproof/run/v1", "playproof/run/v2")
MEMORY_DECISIONS = int(os.environ.get("BENCH_SIGN_MEMORY", "1000000"))
"""Decisions in the record whose verification memory is measured (env BENCH_SIGN_MEMORY)."""
ROUNDS = {1_000: 9, 10_000: 5, 100_000: 3}
"""Interleaved rounds per size; the best round of each phase counts."""
SIGN_TARGET_US = 3.0
CHECK_TARGET_US = 3.0
VERIFY_TARGET_RATIO = 1.2
BYTES_TARGET = 60
"""Bytes per decision of the signed envelope (base64 payload included)."""


def _best_interleaved(phases: dict[str, Callable[[], object]], rounds: int) -> dict[str, float]:
    best = dict.fromkeys(phases, float("inf"))
    for _ in range(rounds):
        for name, fn in phases.items():
            gc.collect()
            start = time.process_time()
            fn()
            best[name] = min(best[name], time.process_time() - start)
    return best


def old_sign(record: RunRecord, key: SigningKey) -> bytes:
    """The previous signing path: the reference canonicalizer over the record, twice."""
    subjects = {
        "run-record": hashlib.sha256(bytes(rfc8785.dumps(record.to_json()))).hexdigest(),
        f"build:{record.target.game_id}": record.target.build_digest,
    }
    statement = make_statement(subjects, RUN_PREDICATE_TYPE, record.to_json())
    payload = bytes(rfc8785.dumps(statement.to_json()))
    return sign_payload(IN_TOTO_PAYLOAD_TYPE, payload, [key]).to_bytes()


def old_check(data: bytes, trusted: VerifyingKey) -> bool:
    """The previous checks: lenient reads, the record digest from the re-serialized model."""
    envelope = parse_envelope(data)
    key_id, _ = signing_key_id(envelope, [trusted])
    value = parse_json(envelope.payload_bytes(), limit=1 << 30, what="payload")
    statement = Statement.model_validate(value)
    record = RunRecord.model_validate(statement.predicate)
    digest = hashlib.sha256(bytes(rfc8785.dumps(record.to_json()))).hexdigest()
    return key_id is not None and statement.subject[0].sha256 == digest


def make_record(decisions: int) -> RunRecord:
    """A 2048 record of ``decisions`` decisions by the random-walk baseline."""
    return playproof.run(
        "native/2048",
        BaselineDriver("random-walk", seed=1),
        max_turns=decisions,
        stop_at_game_over=False,
        worker=False,
    )


def measure(decisions: int, key: SigningKey) -> dict[str, float]:
    """Per-decision microseconds of every phase, and bytes per decision."""
    target = get_target("native/2048")
    record = make_record(decisions)
    trusted = key.verifying_key
    body = canonical_json(record.to_json())
    envelope = sign_record(record, key).to_bytes()
    v1 = record.as_schema("playproof/run/v1")
    v1_envelope = sign_record(v1, key).to_bytes()
    assert envelope == old_sign(record, key), "the fast path must sign the same bytes"
    assert verify_envelope(envelope, trusted).clean
    assert old_check(envelope, trusted)
    assert playproof.verify_signed(envelope, trusted, worker=False).clean

    def bare_verify() -> None:
        replay(Game2048(), record.seed, record.inputs, target.contract)
        hashlib.sha256(body).digest()

    phases: dict[str, Callable[[], object]] = {
        "bare sign": lambda: key.sign(hashlib.sha256(body).digest()),
        "old sign": lambda: old_sign(record, key),
        "sign": lambda: sign_record(record, key),
        "old check": lambda: old_check(envelope, trusted),
        "check": lambda: verify_envelope(envelope, trusted),
        "bare verify": bare_verify,
        "verify": lambda: playproof.verify_signed(envelope, trusted, worker=False),
        "v1 check": lambda: verify_envelope(v1_envelope, trusted),
        "v1 verify": lambda: playproof.verify_signed(v1_envelope, trusted, worker=False),
    }
    best = _best_interleaved(phases, ROUNDS[decisions])
    result = {name: seconds / decisions * 1e6 for name, seconds in best.items()}
    result["bytes"] = len(envelope) / decisions
    result["record bytes"] = len(body) / decisions
    result["v1 bytes"] = len(v1_envelope) / decisions
    result["v1 record bytes"] = len(canonical_json(v1.to_json())) / decisions
    return result


# --- memory: a child verifies a synthesized signed record of a million decisions -------

_CHILD = """
import json, resource, sys, time
from pathlib import Path
import playproof
import playproof.core.record as record_module
import playproof.sign._dsse as dsse
import playproof.sign._verify as verify_module
from playproof.sign import VerifyingKey


def peak_kib():
    # VmHWM is this process's own peak (ru_maxrss carries the parent's over exec on Linux).
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


path, key = Path(sys.argv[1]), VerifyingKey.from_pem(Path(sys.argv[2]).read_bytes())
before = peak_kib()
size = path.stat().st_size + 1
# The bounds on a signed envelope, raised for this record only.
dsse.MAX_ENVELOPE_BYTES = dsse.MAX_PAYLOAD_CHARS = verify_module.MAX_ENVELOPE_BYTES = size
record_module.MAX_RECORD_BYTES = size
start = time.process_time()
report = playproof.verify_signed(path.read_bytes(), key, worker=False)
print(json.dumps({
    "imports_kib": before, "peak_kib": peak_kib(), "verdict": report.verdict,
    "seconds": time.process_time() - start,
}))
"""


def synthesize(decisions: int, schema: Schema) -> RunRecord:
    """A consistent 2048 record of ``decisions`` decisions, written in ``schema``."""
    from playproof.core.chain import ChainLinker, genesis_hash
    from playproof.core.game import VerificationMode
    from playproof.core.record import (
        Accounting,
        Actor,
        ClaimedMilestone,
        DecisionLog,
        Limits,
        Provenance,
        StopReason,
        TargetPin,
    )

    target = get_target("native/2048")
    game = Game2048()
    descriptor = game.descriptor
    words = ("up", "down", "left", "right")
    inputs = [words[(i * 7 + i // 3) % 4] for i in range(decisions)]
    # Latencies as the loop keeps them: milliseconds to LATENCY_DECIMALS decimals.
    latencies = [
        round(((i * 7919) % 100_003) / 7_000_001.0 + 0.001, LATENCY_DECIMALS)
        for i in range(decisions)
    ]
    contract_hash = target.contract.hash
    genesis = genesis_hash(descriptor.id, descriptor.build.digest, contract_hash, seed=0)
    head = ChainLinker(genesis).extend(1, inputs, [0.0] * decisions)
    result = replay(game, 0, inputs, target.contract)
    total = 0.0
    for ms in latencies:
        total += ms
    return RunRecord(
        schema_=schema,
        target=TargetPin(
            name="native/2048",
            game_id=descriptor.id,
            build_digest=descriptor.build.digest,
            contract_hash=contract_hash,
            platform=descriptor.platform.family,
            verification_mode=VerificationMode.REPLAY,
        ),
        actor=Actor(kind="baseline", id="synthetic"),
        seed=0,
        limits=Limits(budget_usd=None, max_turns=decisions, stop_at_game_over=False),
        decisions=DecisionLog(inputs, [0.0] * decisions, latencies),
        chain_head=head,
        claimed=tuple(ClaimedMilestone(id=p.id, turn=p.turn) for p in result.verified),
        milestones_total=len(target.contract.milestones),
        accounting=Accounting(spent_usd=0.0, unmeasured_decisions=0, total_latency_ms=total),
        stop_reason=StopReason.TURN_LIMIT,
        game_over=result.over_at is not None,
        provenance=Provenance(playproof="bench", python=sys.version.split()[0]),
        started_at="2025-01-01T00:00:00Z",
        finished_at="2025-01-01T01:00:00Z",
    )


def memory(decisions: int, schema: Schema, key: SigningKey) -> dict[str, Any]:
    """Peak memory of a child verifying a signed ``decisions``-decision record, and its size."""
    record = synthesize(decisions, schema)
    bound = dsse.MAX_PAYLOAD_CHARS
    dsse.MAX_PAYLOAD_CHARS = 1 << 40  # this record may be larger than a signed envelope may be
    try:
        envelope = sign_record(record, key).to_bytes()
    finally:
        dsse.MAX_PAYLOAD_CHARS = bound
    del record
    with tempfile.TemporaryDirectory(prefix="bench-sign-") as folder:
        path, pem = Path(folder) / "record.dsse.json", Path(folder) / "key.pub.pem"
        path.write_bytes(envelope)
        pem.write_bytes(key.verifying_key.to_pem())
        child = subprocess.run(
            [sys.executable, "-c", _CHILD, str(path), str(pem)],
            capture_output=True,
            text=True,
            timeout=1800,
            check=True,
        )
    figures: dict[str, Any] = json.loads(child.stdout)
    figures["envelope_bytes"] = len(envelope)
    return figures


def main(sizes: tuple[int, ...]) -> None:
    key = SigningKey.generate()
    print(f"per decision, process CPU time, best of {ROUNDS} rounds by size")
    header = ["decisions", "bare sign", "old sign", "sign", "old check", "check"]
    header += ["bare verify", "verify", "ratio", "B/decision", "v1 check", "v1 ratio", "v1 B"]
    print(" | ".join(header))
    for decisions in sizes:
        r = measure(decisions, key)
        ratio = r["verify"] / r["bare verify"]
        print(
            f"{decisions:>9,} | {r['bare sign']:.3f} | {r['old sign']:.2f} | {r['sign']:.2f} | "
            f"{r['old check']:.2f} | {r['check']:.2f} | {r['bare verify']:.2f} | "
            f"{r['verify']:.2f} | {ratio:.2f}x | "
            f"{r['bytes']:.0f} (record {r['record bytes']:.0f}) | "
            f"{r['v1 check']:.2f} | {r['v1 verify'] / r['bare verify']:.2f}x | "
            f"{r['v1 bytes']:.0f} (record {r['v1 record bytes']:.0f})"
        )
        sign_met = "met" if r["sign"] <= SIGN_TARGET_US else "NOT met"
        check_met = "met" if r["check"] <= CHECK_TARGET_US else "NOT met"
        verify_met = "met" if ratio <= VERIFY_TARGET_RATIO else "NOT met"
        bytes_met = "met" if r["bytes"] <= BYTES_TARGET else "NOT met"
        print(
            f"          sign {r['old sign'] / r['sign']:.1f}x faster, "
            f"target <= {SIGN_TARGET_US} us: {sign_met}; "
            f"check {r['old check'] / r['check']:.1f}x faster, target <= {CHECK_TARGET_US} us: "
            f"{check_met}; verify target <= {VERIFY_TARGET_RATIO}x: {verify_met}; "
            f"signed bytes target <= {BYTES_TARGET}: {bytes_met}",
            flush=True,
        )
    for count in sorted({MEMORY_DECISIONS // 10, MEMORY_DECISIONS}):
        for schema in SCHEMAS:
            figures = memory(count, schema, key)
            size_mib = figures["envelope_bytes"] / 2**20
            peak_mib = figures["peak_kib"] / 1024
            base_mib = figures["imports_kib"] / 1024
            print(
                f"verify_signed, {count:,} decisions, {schema} ({size_mib:.1f} MiB signed, "
                f"{figures['envelope_bytes'] / count:.0f} B/decision, verdict "
                f"{figures['verdict']}): peak RSS {peak_mib:.0f} MiB ({base_mib:.0f} MiB after "
                f"imports), {(peak_mib - base_mib) / size_mib:.1f}x the envelope; "
                f"{figures['seconds']:.1f} s",
                flush=True,
            )
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"(this process peaked at {own:.0f} MiB)")


if __name__ == "__main__":
    chosen = tuple(int(arg) for arg in sys.argv[1:]) or SIZES
    for size in chosen:
        ROUNDS.setdefault(size, 3)
    main(chosen)
