"""The proof service over loopback HTTP: ingest rate, proof GET latency, replay throughput.

The server runs in another process (uvicorn, ``playproof.service``), the
client is httpx, on 127.0.0.1; SQLite and PostgreSQL side by side (PostgreSQL
is started from the Debian binaries in a temporary folder, as the service
tests do; it is skipped when they are not installed). Measured per database:

- ``ingest``: signature-checked uploads of distinct signed 2048 records, one
  client, uploads per second (the server's replays are held back meanwhile,
  so the upload path alone is timed; each round's new server takes
  ``INGEST_WARMUP`` uploads first, untimed). Target: at least 200 records/s.
- ``proof GET``: 10,000 verified, logged runs stored (each with the proof
  document the server renders when it stores a verdict), then 8 concurrent
  clients fetching random proof documents; p50 and p95 latency in ms.
  Target: p95 at most 10 ms. In the first round each document is fetched
  about once (cold); the later rounds ask for the same documents again.
- ``replay``: wall time for the server to verify a batch of uploaded records
  (12, and 60: a short batch also pays for filling and draining the pipeline)
  with one replay worker (uploads, then a long poll per run, as ``playproof
  submit`` waits), against ``playproof.verify_signed`` of the same records
  run directly in this process, one after another (the baseline, timed just
  before and just after the served batch and averaged, so that a drift in the
  machine's speed meanwhile moves both sides alike); throughput ratio
  baseline/server. Also shown: the same records verified by ``playproof
  verify FOLDER -k KEY`` as a command (a new process and its default pool:
  what a person runs), over the server's time. This end-to-end figure also
  pays for the ingest of each upload (measured on its own above) and for
  this benchmark's own client, all on the same cores as the replay.
- ``steady replay``: the server's replay throughput alone. ``STEADY_BATCH``
  records are uploaded to a server whose replays are held back, that server
  stops with them pending, and a new server picks them up as it starts (as
  after a crash) and replays them one after another; its rate is the
  verdicts stored per second, from the first stored verdict to the last (the
  ``finished_at`` the server wrote), so that starting the process and its
  replay worker is left out. Against ``verify_signed`` of the same records
  run directly, timed just before and just after. Target: at least 0.9x
  (the issue's "server-side replay throughput").

Every figure is measured ``ROUNDS`` times and printed as the median and each
round, because a shared machine's speed drifts from one minute to the next.
Absolute figures depend on the machine; the ratio is measured in the same run.

    python benchmarks/bench_service.py [runs_stored]
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

import playproof
from playproof.core.record import RunRecord
from playproof.service.db import make_engine, session_factory, upgrade
from playproof.service.log.models import LogLeaf
from playproof.service.owners.services import add_key, add_owner, create_token
from playproof.service.proofs.cache import render_proof
from playproof.service.runs.models import Run
from playproof.sign import SigningKey

STORED_RUNS = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000
ROUNDS = 3
"""Every figure is measured this many times (a shared machine's speed drifts)."""
INGEST_UPLOADS = 300
INGEST_WARMUP = 10
"""Uploads each ingest round's new server takes before the timed ones (psycopg prepares a
statement on its fifth use on a connection; on a new PostgreSQL database the first 25
uploads took 40% longer than the next)."""
CLIENTS = 8
GETS_PER_CLIENT = 250
REPLAY_BATCHES = (12, 60)
"""Records per replay batch: a short batch and one long enough for the steady rate."""
STEADY_BATCH = 60
"""Records per steady-replay round."""
REPLAY_TURNS = 2_000
REPLAY_DRIVER = "random-walk"
INGEST_TARGET = 200.0
P95_TARGET_MS = 10.0
REPLAY_TARGET = 0.9
READY_WAIT_S = 60.0
VERDICT_WAIT_S = 600.0
PG_TIMEOUT_S = 60

LAUNCH = """
import sys
import uvicorn
from playproof.service.app import create_app, prepare_database
from playproof.service.settings import ServiceSettings
settings = ServiceSettings(
    database_url=sys.argv[1], replay_delay_s=float(sys.argv[3]), log_key_file=sys.argv[4]
)
prepare_database(settings)
uvicorn.run(create_app(settings), host="127.0.0.1", port=int(sys.argv[2]), log_level="warning")
"""


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def _server(url: str, folder: Path, delay_s: float = 0.0) -> Iterator[str]:
    port = _free_port()
    process = subprocess.Popen(
        [sys.executable, "-c", LAUNCH, url, str(port), str(delay_s), str(folder / "log.key")],
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + READY_WAIT_S
        while True:
            try:
                httpx.get(f"{base}/api/v1/log/head", timeout=2.0)
                break
            except httpx.HTTPError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("the service did not start") from None
                time.sleep(0.1)
        yield base
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=30)


@contextmanager
def _postgres() -> Iterator[str | None]:
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"))
    if not found:
        yield None
        return
    binaries = found[-1].parent
    root = os.geteuid() == 0
    wrap = ["runuser", "-u", "postgres", "--"] if root else []
    base = Path(tempfile.mkdtemp(prefix="playproof-bench-pg-"))
    if root:
        shutil.chown(base, "postgres", "postgres")
    data, port = base / "data", _free_port()
    subprocess.run(
        [*wrap, str(binaries / "initdb"), "-D", str(data), "-U", "postgres", "--auth=trust"],
        check=True,
        capture_output=True,
        timeout=PG_TIMEOUT_S,
    )
    ctl = str(binaries / "pg_ctl")
    options = f"-h 127.0.0.1 -p {port} -k {base} -F"
    subprocess.run(
        [*wrap, ctl, "-D", str(data), "-l", str(base / "log"), "-w", "-o", options, "start"],
        check=True,
        capture_output=True,
        timeout=PG_TIMEOUT_S,
    )
    try:
        import psycopg

        dsn = f"postgresql://postgres@127.0.0.1:{port}/postgres"
        with psycopg.connect(dsn, autocommit=True) as connection:
            connection.execute("CREATE DATABASE bench")
        yield f"postgresql+psycopg://postgres@127.0.0.1:{port}/bench"
    finally:
        subprocess.run(
            [*wrap, ctl, "-D", str(data), "-m", "immediate", "-w", "stop"],
            check=False,
            capture_output=True,
            timeout=PG_TIMEOUT_S,
        )
        shutil.rmtree(base, ignore_errors=True)


def _variants(record: RunRecord, signer: SigningKey, count: int) -> list[bytes]:
    data = record.to_json()
    return [
        playproof.sign_record(
            RunRecord.model_validate({**data, "started_at": f"bench {uuid.uuid4().hex}"}), signer
        ).to_bytes()
        for _ in range(count)
    ]


def _setup(url: str, signer: SigningKey) -> str:
    engine = make_engine(url)
    upgrade(engine)
    with session_factory(engine)() as session:
        owner = add_owner(session, f"bench{uuid.uuid4().hex[:8]}")
        add_key(session, owner, signer.verifying_key)
        token = create_token(session, owner)
        session.commit()
    engine.dispose()
    return token


def _ingest(url: str, folder: Path, token: str, bodies: list[bytes]) -> float:
    with _server(url, folder, delay_s=3600.0) as base, httpx.Client(timeout=30.0) as client:
        headers = {"Authorization": f"Bearer {token}"}
        for at, body in enumerate(bodies):
            if at == INGEST_WARMUP:
                start = time.perf_counter()
            answer = client.post(f"{base}/api/v1/runs", content=body, headers=headers)
            if answer.status_code != 202:
                raise RuntimeError(f"upload refused: {answer.status_code} {answer.text[:200]}")
        return (len(bodies) - INGEST_WARMUP) / (time.perf_counter() - start)


def _fill(url: str, template: bytes, signer: SigningKey, count: int) -> list[str]:
    """Store ``count`` verified, logged runs copied from one real upload (fast, in bulk)."""
    report = playproof.verify_signed(template, signer.verifying_key).model_dump_json()
    engine = make_engine(url)
    sessions = session_factory(engine)
    with sessions() as session:
        model = session.query(Run).first()
        if model is None:
            raise RuntimeError("no uploaded run to copy")
        columns = [c.name for c in Run.__table__.columns]
        base = {c: getattr(model, c) for c in columns}
        size = session.query(LogLeaf).count()
        ids = [uuid.uuid4().hex for _ in range(count)]
        for chunk in range(0, count, 1000):
            for run_id in ids[chunk : chunk + 1000]:
                fields = {"id": run_id, "envelope_sha256": uuid.uuid4().hex * 2}
                session.add(Run(**{**base, **fields, "status": "verified", "report": report}))
            session.flush()
            # Each run's proof document, rendered as the server does when it stores a verdict.
            for run_id in ids[chunk : chunk + 1000]:
                run = session.get(Run, run_id)
                assert run is not None
                rendered = render_proof(session, run)
                if rendered is not None:
                    run.proof_document, run.proof_key = rendered
            session.flush()
            for offset, run_id in enumerate(ids[chunk : chunk + 1000], start=chunk):
                session.add(
                    LogLeaf(
                        leaf_index=size + offset, run_id=run_id, record_digest=model.record_digest
                    )
                )
            session.flush()
        session.commit()
    engine.dispose()
    return ids


def _latencies(base: str, ids: list[str]) -> list[float]:
    found: list[float] = []
    lock = threading.Lock()

    def client_loop(seed: int) -> None:
        chooser = random.Random(seed)
        mine = []
        with httpx.Client(timeout=30.0) as client:
            for _ in range(GETS_PER_CLIENT):
                run_id = chooser.choice(ids)
                start = time.perf_counter()
                answer = client.get(f"{base}/api/v1/verifier/runs/{run_id}")
                mine.append((time.perf_counter() - start) * 1000)
                if answer.status_code != 200:
                    raise RuntimeError(f"GET {answer.status_code}")
        with lock:
            found.extend(mine)

    threads = [threading.Thread(target=client_loop, args=(i,)) for i in range(CLIENTS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return found


def _cli_verify(folder: Path, bodies: list[bytes], signer: SigningKey) -> float:
    """Seconds for ``playproof verify FOLDER -k KEY`` (a new process, its default pool)."""
    records = folder / "cli-records"
    shutil.rmtree(records, ignore_errors=True)
    records.mkdir()
    for number, body in enumerate(bodies):
        (records / f"run-{number:03d}.json").write_bytes(body)
    key = folder / "cli-key.pub.pem"
    key.write_bytes(signer.verifying_key.to_pem())
    command = [
        str(Path(sys.executable).parent / "playproof"),
        "verify",
        str(records),
        "-k",
        str(key),
    ]
    wall = time.perf_counter()
    done = subprocess.run(command, capture_output=True, timeout=VERDICT_WAIT_S, check=False)
    elapsed = time.perf_counter() - wall
    if done.returncode != 0:
        raise RuntimeError(f"playproof verify failed: {done.stdout[-300:]!r}")
    return elapsed


def _direct(bodies: list[bytes], signer: SigningKey) -> float:
    """Seconds for ``playproof.verify_signed`` of ``bodies`` in this process, one after another."""
    wall = time.perf_counter()
    for body in bodies:
        if not playproof.verify_signed(body, signer.verifying_key).clean:
            raise RuntimeError("a benchmark record does not verify")
    return time.perf_counter() - wall


def _replay(
    url: str,
    folder: Path,
    token: str,
    rounds: list[list[bytes]],
    warm: list[bytes],
    signer: SigningKey,
) -> tuple[list[float], list[float]]:
    """Per round: direct/served and CLI/served (the direct baseline brackets the server's run)."""
    playproof.verify_signed(warm[0], signer.verifying_key)  # imports, as the pool's warm-up
    ratios: list[float] = []
    cli: list[float] = []
    with _server(url, folder) as base, httpx.Client(timeout=30.0) as client:
        headers = {"Authorization": f"Bearer {token}"}

        def upload_all(batch: list[bytes]) -> float:
            wall = time.perf_counter()
            ids = [
                client.post(f"{base}/api/v1/runs", content=b, headers=headers).json()["id"]
                for b in batch
            ]
            deadline = time.monotonic() + VERDICT_WAIT_S
            for run_id in ids:  # long polls, as ``playproof submit`` waits
                url = f"{base}/api/v1/runs/{run_id}"
                while client.get(url, params={"wait": 10}).json()["status"] == "pending":
                    if time.monotonic() > deadline:
                        raise RuntimeError("replays did not finish")
            return time.perf_counter() - wall

        upload_all(warm)  # the replay process starts and imports on its first job

        for bodies in rounds:
            command = _cli_verify(folder, bodies, signer)
            # The baseline brackets the served batch (timed just before and just after,
            # averaged), so a machine whose speed drifts meanwhile moves both sides alike.
            before = _direct(bodies, signer)
            served = upload_all(bodies)
            after = _direct(bodies, signer)
            ratios.append((before + after) / 2 / served)
            cli.append(command / served)
    return ratios, cli


def _steady(
    url: str, folder: Path, token: str, rounds: list[list[bytes]], signer: SigningKey
) -> list[float]:
    """Per round: direct/served, the server replaying runs it found pending as it started."""

    ratios: list[float] = []
    headers = {"Authorization": f"Bearer {token}"}
    for bodies in rounds:
        # Uploaded to a server whose replays are held back; it stops with them pending.
        with _server(url, folder, delay_s=3600.0) as base, httpx.Client(timeout=30.0) as client:
            ids = [
                client.post(f"{base}/api/v1/runs", content=b, headers=headers).json()["id"]
                for b in bodies
            ]
        before = _direct(bodies, signer)
        with _server(url, folder) as base, httpx.Client(timeout=30.0) as client:
            deadline = time.monotonic() + VERDICT_WAIT_S
            for run_id in ids:
                answer = f"{base}/api/v1/runs/{run_id}"
                while client.get(answer, params={"wait": 10}).json()["status"] == "pending":
                    if time.monotonic() > deadline:
                        raise RuntimeError("replays did not finish")
        after = _direct(bodies, signer)
        engine = make_engine(url)
        with session_factory(engine)() as session:
            rows = session.query(Run.finished_at, Run.status).filter(Run.id.in_(ids)).all()
        engine.dispose()
        if len(rows) != len(ids) or any(status != "verified" for _, status in rows):
            raise RuntimeError("a steady-replay run was not verified")
        stamps = sorted(finished for finished, _ in rows if finished is not None)
        served = (stamps[-1] - stamps[0]).total_seconds() / (len(stamps) - 1)
        ratios.append((before + after) / 2 / len(bodies) / served)
    return ratios


def _spread(values: list[float], digits: int = 2) -> str:
    """The median, then every value in the order measured."""
    each = " ".join(f"{v:.{digits}f}" for v in values)
    return f"{statistics.median(values):.{digits}f} ({each})"


def _measure(name: str, url: str, signer: SigningKey, small: list[bytes], big: list[bytes]) -> None:
    folder = Path(tempfile.mkdtemp(prefix="playproof-bench-"))
    try:
        token = _setup(url, signer)
        per_round = len(small) // ROUNDS
        rates = [
            _ingest(url, folder, token, small[i * per_round : (i + 1) * per_round])
            for i in range(ROUNDS)
        ]
        _fill(url, small[0], signer, STORED_RUNS)
        p50s: list[float] = []
        p95s: list[float] = []
        with _server(url, folder, delay_s=3600.0) as base:
            engine = make_engine(url)
            with session_factory(engine)() as session:
                ids = [r for (r,) in session.query(Run.id).filter(Run.status == "verified")]
            engine.dispose()
            # The first round fetches each document about once (cold); later rounds
            # ask for the same documents again.
            for _ in range(ROUNDS):
                times = sorted(_latencies(base, ids))
                p50s.append(statistics.median(times))
                p95s.append(times[int(len(times) * 0.95) - 1])
        # Short and long batches alternate: a short batch also pays the pipeline's fill and
        # drain (the first upload before any replay, the last verdict's storing), a long one
        # shows the steady throughput.
        sizes = [size for _ in range(ROUNDS) for size in REPLAY_BATCHES]
        rounds, start = [], 1
        for size in sizes:
            rounds.append(big[start : start + size])
            start += size
        ratios, cli = _replay(url, folder, token, rounds, big[:1], signer)
        steady = _steady(
            url,
            folder,
            token,
            [big[start + i * STEADY_BATCH : start + (i + 1) * STEADY_BATCH] for i in range(ROUNDS)],
            signer,
        )
        print(f"{name}, {ROUNDS} rounds each (median, then each round in order):", flush=True)
        print(f"  ingest, records/s: {_spread(rates, 0)} (target >= {INGEST_TARGET:.0f})")
        print(
            f"  proof GET over {len(ids)} runs, {CLIENTS} clients: p50 ms {_spread(p50s)}; "
            f"p95 ms {_spread(p95s)} (target <= {P95_TARGET_MS:.0f}; first round cold)"
        )
        for size in REPLAY_BATCHES:
            mine = [r for r, n in zip(ratios, sizes, strict=True) if n == size]
            command = [r for r, n in zip(cli, sizes, strict=True) if n == size]
            print(
                f"  replay of {size} records, verify_signed direct / served: {_spread(mine)} "
                f"(end to end: with each upload's ingest and this client on the same cores); "
                f"`playproof verify FOLDER` as a command / "
                f"served: {_spread(command)}",
                flush=True,
            )
        print(
            f"  steady replay of {STEADY_BATCH} records found pending at start, "
            f"verify_signed direct / served: {_spread(steady)} (target >= {REPLAY_TARGET})",
            flush=True,
        )
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def main() -> None:
    signer = SigningKey.generate()
    short = playproof.run("native/2048", playproof.BaselineDriver("round-robin"), max_turns=30)
    long = playproof.run(
        "native/2048",
        playproof.BaselineDriver(REPLAY_DRIVER),
        max_turns=REPLAY_TURNS,
        stop_at_game_over=False,
    )
    small = _variants(short, signer, INGEST_UPLOADS + ROUNDS * INGEST_WARMUP)
    big = _variants(long, signer, (sum(REPLAY_BATCHES) + STEADY_BATCH) * ROUNDS + 1)
    print(
        f"{INGEST_UPLOADS} uploads of {len(short.decisions)}-decision records; "
        f"{STORED_RUNS} stored runs; replay of batches of {REPLAY_BATCHES} records of "
        f"{len(long.decisions)} decisions; the machine is shared, so absolute times vary",
        flush=True,
    )
    folder = Path(tempfile.mkdtemp(prefix="playproof-bench-sqlite-"))
    try:
        _measure("sqlite", f"sqlite:///{folder / 'service.db'}", signer, small, big)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    with _postgres() as url:
        if url is None:
            print("postgresql: not installed (scripts/system-deps.sh installs it); skipped")
        else:
            _measure("postgresql", url, signer, small, big)


def _stop(_signum: int, _frame: object) -> None:
    # A SIGTERM (the benchmark runner's time bound, a Ctrl-C elsewhere) unwinds like an
    # error, so the servers and the PostgreSQL this benchmark started are stopped.
    raise SystemExit(143)


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, _stop)
    main()
