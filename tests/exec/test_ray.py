"""The Ray executor against a real two-node Ray cluster on 127.0.0.1 that the tests start.

Calibration, batch verification, corpus grading and the service's replays
on Ray give exactly the local pool's results; a worker process that dies
mid-job (or mid-grade) is retried, reported, and the job's results are still
identical; a node that cannot build the grading jail is named before any
case runs.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("ray", reason="the ray extra is not installed: pip install 'playproof[ray]'")

from ray_cluster import LocalRayCluster

from playproof._api import run
from playproof.cli._files import key_paths
from playproof.core.baselines import baseline_inputs
from playproof.core.record import RunRecord
from playproof.corpus import (
    GradeRecord,
    grade_candidate,
    load_answers,
    load_corpus,
    load_manifest,
    reference_candidate_spec,
    shipped_paths,
    verify_grade,
)
from playproof.corpus._manifest import Corpus, CorpusAnswers
from playproof.corpus._runner import CandidateSpec
from playproof.corpus._variants import VariantPlan
from playproof.errors import NotSupportedError
from playproof.exec import (
    GameSpec,
    calibrate_target,
    check_grading_nodes,
    close_replayer,
    make_replayer,
    open_executor,
    resolve_target,
    verify_many,
)
from playproof.exec._ray import RayExecutor, check_nodes
from playproof.sign import SigningKey, sign_record
from playproof.verify import ReplayJob, SerialReplayer

pytestmark = [pytest.mark.slow, pytest.mark.ray]

TARGET = resolve_target("native/2048")
MOVES = ("up", "left", "down", "right")


@pytest.fixture(scope="module")
def local_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalRayCluster]:
    nodes = LocalRayCluster(tmp_path_factory.mktemp("ray"))
    with nodes:
        yield nodes


@pytest.fixture(scope="module")
def cluster(local_cluster: LocalRayCluster) -> str:
    return local_cluster.address


def _free_cpus() -> float:
    """CPUs of the cluster not held by a task (this process must be connected)."""
    import ray

    free: dict[str, float] = ray.available_resources()  # type: ignore[no-untyped-call]
    return free.get("CPU", 0.0)


def _agent(observation: Any, history: Any, context: Any) -> str:
    return MOVES[len(history) % len(MOVES)]


@pytest.fixture(scope="module")
def records(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, SigningKey]:
    folder = tmp_path_factory.mktemp("records")
    key, stranger = SigningKey.generate(), SigningKey.generate()
    for seed in range(4):
        record = run(TARGET, _agent, seed=seed, max_turns=30 + seed)
        signer = stranger if seed == 3 else key
        (folder / f"run-{seed}.json").write_bytes(sign_record(record, signer).to_bytes())
    return folder, key


def test_calibration_on_ray_equals_the_local_pool(cluster: str) -> None:
    retried: list[str] = []
    on_ray = calibrate_target(TARGET, executor="ray", address=cluster, on_retry=retried.append)
    assert on_ray == calibrate_target(TARGET, executor="local", workers=2)
    assert on_ray.model_dump_json() == calibrate_target(TARGET, executor="serial").model_dump_json()
    assert retried == []


def test_batch_verification_on_ray_equals_the_local_pool(
    cluster: str, records: tuple[Path, SigningKey]
) -> None:
    folder, key = records
    seen: list[tuple[int, int]] = []
    keys = [key.verifying_key]
    on_ray = verify_many(
        [folder], keys, executor="ray", address=cluster, progress=lambda d, t: seen.append((d, t))
    )
    local = verify_many([folder], keys, executor="local", jobs=2)
    assert [v.path.name for v in on_ray] == [f"run-{i}.json" for i in range(4)]
    assert [v.report.model_dump_json() for v in on_ray] == [
        v.report.model_dump_json() for v in local
    ]
    assert [v.report.clean for v in on_ray] == [True, True, True, False]
    assert seen[-1] == (4, 4)


def test_a_worker_killed_mid_job_is_retried_reported_and_changes_nothing(
    cluster: str, tmp_path: Path
) -> None:
    marker = tmp_path / "died"
    spec = GameSpec(factory="ray_cluster:make_flaky_2048", options={"marker": str(marker)})
    jobs = [
        ReplayJob(seed, baseline_inputs("random-walk", MOVES, 40 + seed, seed=seed), seed == 1)
        for seed in range(6)
    ]
    retried: list[str] = []
    replayer = make_replayer(spec, executor="ray", address=cluster, on_retry=retried.append)
    try:
        on_ray = replayer.replay_many(jobs, TARGET.contract)
    finally:
        close_replayer(replayer)
    assert marker.exists()  # a worker process did die
    assert len(retried) == 1
    assert "WorkerCrashedError" in retried[0]
    assert "attempt 2" in retried[0]
    serial = SerialReplayer(
        GameSpec(factory="playproof.adapters.native.game2048:make_game").open
    ).replay_many(jobs, TARGET.contract)
    assert on_ray == serial


def test_a_tasks_own_error_comes_back_as_itself_and_is_not_retried(cluster: str) -> None:
    retried: list[str] = []
    executor = RayExecutor(address=cluster, on_retry=retried.append)
    try:
        assert executor.width == 2
        assert executor.submit(int, "42").result(timeout=60) == 42
        with pytest.raises(ValueError, match="invalid literal"):
            executor.submit(int, "x").result(timeout=60)
    finally:
        executor.shutdown()
    assert retried == []


def test_shutting_down_cancels_running_and_queued_tasks(cluster: str) -> None:
    observer = RayExecutor(address=cluster)  # keeps this process connected after the job
    try:
        executor, width = open_executor("ray", address=cluster)
        futures = [executor.submit(time.sleep, 600) for _ in range(width + 2)]
        while _free_cpus() > 0:
            time.sleep(0.2)  # every CPU holds a 600 s task
        executor.shutdown(wait=True, cancel_futures=True)
        assert all(f.cancelled() for f in futures)
        deadline = time.monotonic() + 120  # far below one task's 600 s
        while _free_cpus() < width and time.monotonic() < deadline:
            time.sleep(0.2)
        assert _free_cpus() == width
    finally:
        observer.shutdown()


def test_every_node_is_checked_and_a_node_lacking_something_is_named(cluster: str) -> None:
    executor = RayExecutor(address=cluster)
    try:
        check_nodes(lambda: True, "nothing")
        with pytest.raises(NotSupportedError, match="2 of 2 Ray nodes lack bubblewrap"):
            check_nodes(lambda: False, "bubblewrap")
    finally:
        executor.shutdown()


def _a_broken_check() -> bool:
    raise OSError("the node's disk went away")


def test_a_node_check_that_fails_on_its_node_is_a_typed_error(cluster: str) -> None:
    from playproof.errors import RunError

    executor = RayExecutor(address=cluster)
    try:
        with pytest.raises(RunError, match=r"per-node check for bubblewrap failed.*disk went away"):
            check_nodes(_a_broken_check, "bubblewrap")
    finally:
        executor.shutdown()


def test_verify_on_the_command_line_over_ray_equals_the_local_pool(
    cluster: str, records: tuple[Path, SigningKey]
) -> None:
    folder, key = records
    key.verifying_key.save(folder / "trusted.pub.pem")
    exe = [sys.executable, "-c", "from playproof.cli import main; main()", "verify", str(folder)]
    common = ["--key", str(folder / "trusted.pub.pem"), "--json"]
    outputs = [
        subprocess.run(
            [*exe, *common, *extra], capture_output=True, text=True, timeout=300, check=False
        )
        for extra in (["--executor", "ray", "--ray-address", cluster], ["-j", "2"])
    ]
    assert [done.returncode for done in outputs] == [1, 1], outputs[0].stderr
    assert outputs[0].stdout == outputs[1].stdout
    assert json.loads(outputs[0].stdout)["clean"] == 3


MATRIX = """
name = "tiny"
targets = ["native/2048"]
seeds = [0, 1, 2]
max_turns = 8

[[agents]]
name = "robin"
agent = "baseline:round-robin"
"""


def test_a_matrix_played_and_reported_on_ray_scores_as_one_played_serially(
    cluster: str, tmp_path: Path
) -> None:
    from playproof.cli._matrix import build_agent
    from playproof.matrix import collect, parse_spec, run_matrix

    key = SigningKey.generate()
    spec = parse_spec(MATRIX)
    outcomes = {
        name: run_matrix(spec, tmp_path / name, key, build_agent, **options)  # type: ignore[arg-type]
        for name, options in (
            ("ray", {"executor": "ray", "address": cluster}),
            ("serial", {"executor": "serial"}),
        )
    }
    assert [o.played for o in outcomes.values()] == [3, 3]
    reports = {
        name: collect(tmp_path / name, [key.verifying_key], executor=name, address=address)
        for name, address in (("ray", cluster), ("serial", None))
    }
    assert [len(r.cells) for r in reports.values()] == [3, 3]
    # Same cells, same inputs played, same milestones recomputed (latencies differ by nature).
    assert [(c.cell, c.record.inputs, c.report.verified) for c in reports["ray"].cells] == [
        (c.cell, c.record.inputs, c.report.verified) for c in reports["serial"].cells
    ]


def test_ctrl_c_stops_the_command_and_frees_every_cpu_of_the_cluster(cluster: str) -> None:
    import signal

    pytest.importorskip("ale_py", reason="the ale extra is not installed")
    command = [
        *[sys.executable, "-c", "from playproof.cli import main; main()", "calibrate"],
        *["ale/breakout", "--walks", "60", "--executor", "ray", "--ray-address", cluster],
    ]
    executor = RayExecutor(address=cluster)  # this test's own view of the cluster
    idle = time.monotonic() + 60
    while _free_cpus() < 2 and time.monotonic() < idle:
        time.sleep(0.2)  # an earlier test's tasks may still be ending: start from an idle cluster
    assert _free_cpus() == 2
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while _free_cpus() > 0 and time.monotonic() < deadline:
            time.sleep(0.2)  # until the command's episodes hold every CPU
        assert process.poll() is None, process.communicate()
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=120)
        assert process.returncode == 130, stderr
        while _free_cpus() < 2 and time.monotonic() < deadline + 60:
            time.sleep(0.2)
        assert _free_cpus() == 2
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        executor.shutdown()


# Corpus grading on Ray: whole case groups as tasks, jailed on the node they land on.

VARIANT_SEED = "5a" * 32


def _chip8(
    candidate: CandidateSpec | None = None,
) -> tuple[Corpus, CorpusAnswers, CandidateSpec, VariantPlan]:
    manifest_path, answers_path, roms = shipped_paths("chip8")
    manifest = load_manifest(manifest_path)
    corpus = load_corpus(manifest, roms)
    answers = load_answers(answers_path, manifest)
    spec = dataclasses.replace(
        candidate or reference_candidate_spec("chip8"),
        hidden=(roms.resolve(),),
        secret=(answers_path.resolve(),),
    )
    plan = VariantPlan(seed=bytes.fromhex(VARIANT_SEED), per_case=1, symbols={})
    return corpus, answers, spec, plan


def _same_but_time(record: GradeRecord) -> dict[str, Any]:
    """A grade record's fields apart from when it ran and its sandbox layout (the only fields
    a local and a cluster grading differ in)."""
    return record.model_dump(mode="json", exclude={"started_at", "finished_at", "sandbox"})


def test_corpus_grading_on_ray_equals_the_local_pool_one_task_per_case(cluster: str) -> None:
    corpus, answers, spec, plan = _chip8()
    local = grade_candidate(corpus, answers, spec, jobs=2, variants=plan)
    retried: list[str] = []
    executor = RayExecutor(address=cluster, on_retry=retried.append)
    try:
        assert check_grading_nodes(spec) == 2
        on_ray = grade_candidate(
            corpus, answers, spec, variants=plan, executor=executor, isolation="bubblewrap"
        )
        submitted = executor.submitted
    finally:
        executor.shutdown()
    assert on_ray.record.isolation == local.record.isolation == "bubblewrap"
    # A task is one group of cases, so on Ray each process gets a new sandbox; locally a slot
    # that starts several processes keeps a warm one (as root).
    assert on_ray.record.sandbox == "per-process"
    assert local.record.sandbox == ("per-slot" if os.geteuid() == 0 else "per-process")
    assert on_ray.grade.passed == on_ray.grade.denominator == len(corpus.manifest.cases)
    assert on_ray.record.variants  # the variants ran too, and the reference beside them
    assert _same_but_time(on_ray.record) == _same_but_time(local.record)
    assert [o.case_id for o in on_ray.observations] == [c.id for c in corpus.manifest.cases]
    # One task per case: the originals and their variants for the candidate, the variants
    # again for the reference; never a task per step.
    cases, variants = len(corpus.manifest.cases), len(on_ray.record.variants)
    assert submitted == cases + 2 * variants
    assert retried == []


def test_grade_on_the_command_line_over_ray_equals_the_local_pool(
    cluster: str, tmp_path: Path
) -> None:
    exe = [sys.executable, "-c", "from playproof.cli import main; main()", "grade"]
    common = [
        *["--candidate", "reference", "--corpus", "chip8", "--variant-seed", VARIANT_SEED],
        *["--key-dir", str(tmp_path / "keys"), "--json"],
    ]
    outputs = {}
    for name, extra in (
        ("ray", ["--executor", "ray", "--ray-address", cluster]),
        ("local", ["--jobs", "2"]),
    ):
        done = subprocess.run(
            [*exe, *common, *extra, "--out", str(tmp_path / f"{name}.json")],
            capture_output=True, text=True, timeout=300, check=False,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        outputs[name] = json.loads(done.stdout)
        outputs[name].pop("record")
    assert outputs["ray"] == outputs["local"]
    assert outputs["ray"]["retried"] == 0
    key = SigningKey.load(key_paths(tmp_path / "keys")[0]).verifying_key
    records = {
        name: verify_grade((tmp_path / f"{name}.json").read_bytes(), key)[1] for name in outputs
    }
    assert records["ray"] is not None
    assert records["local"] is not None
    assert _same_but_time(records["ray"]) == _same_but_time(records["local"])


SLOW_CANDIDATE = """
import runpy, sys, time
time.sleep(float(sys.argv[1]))
sys.argv[:] = [sys.argv[2]]
runpy.run_path(sys.argv[0], run_name="__main__")
"""
SLOW_START_S = 2.0
"""Each case's candidate waits this long before serving: time to kill its Ray worker."""


def _busy_grading_worker(nodes: LocalRayCluster) -> int | None:
    """A Ray worker of this cluster running a case group with its jailed candidate started."""
    for pid in nodes.pids():
        with contextlib.suppress(OSError):
            title = Path(f"/proc/{pid}/cmdline").read_bytes()
            # Children of any thread: the case may be started from a worker thread.
            children = [
                child
                for task in Path(f"/proc/{pid}/task").iterdir()
                for child in (task / "children").read_text().split()
            ]
            if title.startswith(b"ray::_invoke") and children:
                return pid
    return None


def test_a_worker_killed_mid_grade_is_retried_reported_and_changes_nothing(
    local_cluster: LocalRayCluster, tmp_path: Path
) -> None:
    import os
    import signal
    import threading

    reference = reference_candidate_spec("chip8")
    wrapper = tmp_path / "slow_candidate.py"
    wrapper.write_text(SLOW_CANDIDATE)
    slow = dataclasses.replace(
        reference,
        command=(sys.executable, "-I", str(wrapper), str(SLOW_START_S), reference.command[-1]),
        read_only=(*reference.read_only, wrapper),
    )
    corpus, answers, spec, _ = _chip8(slow)
    killed: list[int] = []
    stop = threading.Event()

    def kill_one_worker_mid_case() -> None:
        while not stop.is_set() and not killed:
            pid = _busy_grading_worker(local_cluster)
            if pid is not None:
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)
            time.sleep(0.05)

    retried: list[str] = []
    executor = RayExecutor(address=local_cluster.address, on_retry=retried.append)
    killer = threading.Thread(target=kill_one_worker_mid_case)
    killer.start()
    try:
        on_ray = grade_candidate(corpus, answers, spec, executor=executor, isolation="bubblewrap")
    finally:
        stop.set()
        killer.join()
        executor.shutdown()
    assert len(killed) == 1  # a worker did die, in the middle of a case
    assert len(retried) == 1, retried
    assert "attempt 2" in retried[0]
    local = grade_candidate(corpus, answers, spec, jobs=2)
    assert on_ray.grade.passed == len(corpus.manifest.cases)
    assert _same_but_time(on_ray.record) == _same_but_time(local.record)


def _without_bubblewrap(folder: Path) -> str:
    """A PATH of links to every command on this PATH except bubblewrap's ``bwrap``."""
    folder.mkdir()
    for entry in os.environ.get("PATH", "").split(os.pathsep):
        if not entry or not Path(entry).is_dir():
            continue
        for command in Path(entry).iterdir():
            target = folder / command.name
            if command.name != "bwrap" and not os.path.lexists(target):
                target.symlink_to(command)
    return str(folder)


def test_a_node_that_cannot_build_the_jail_is_named_before_any_case_runs(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    import ray

    _, _, spec, _ = _chip8()
    env = {"PATH": _without_bubblewrap(tmp_path / "bin")}
    # A short folder: Ray's socket paths under it must stay within 107 bytes.
    with LocalRayCluster(tmp_path_factory.mktemp("nojail"), second_node_env=env) as address:
        executor = RayExecutor(address=address)
        try:
            nodes = ray.nodes()  # type: ignore[no-untyped-call]
            head = next(n["NodeID"] for n in nodes if "node:__internal_head__" in n["Resources"])
            other = next(n["NodeID"] for n in nodes if n["NodeID"] != head)
            with pytest.raises(NotSupportedError) as refused:
                check_grading_nodes(spec)
            assert executor.submitted == 0
        finally:
            executor.shutdown()
    message = str(refused.value)
    assert message.startswith("1 of 2 Ray nodes lack what corpus grading needs: ")
    assert f"(node {other[:12]}): bubblewrap is not installed" in message
    assert head[:12] not in message
    assert "\n" not in message


# The service's server-side replays as Ray tasks.

SERVE_READY_S = 120.0
VERDICT_WAIT_S = 300.0


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    exe = [sys.executable, "-c", "from playproof.cli import main; main()"]
    return subprocess.run([*exe, *args], capture_output=True, text=True, timeout=300, check=False)


def _verdicts(
    database: str, extra: list[str], uploads: list[bytes], token: str
) -> list[dict[str, Any]]:
    """Serve ``database`` with ``extra`` options, upload every record, wait for every verdict."""
    import httpx
    from ray_cluster import free_port

    port = free_port()
    url = f"http://127.0.0.1:{port}"
    exe = [sys.executable, "-c", "from playproof.cli import main; main()"]
    server = subprocess.Popen(
        [*exe, "serve", "--database-url", database, "--port", str(port), *extra],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + SERVE_READY_S
        while True:
            try:
                httpx.get(f"{url}/openapi.json", timeout=2.0)
                break
            except httpx.HTTPError:
                assert server.poll() is None, "the server stopped"
                assert time.monotonic() < deadline, "the server did not start"
                time.sleep(0.2)
        headers = {"Authorization": f"Bearer {token}"}
        ids = []
        for upload in uploads:
            answer = httpx.post(f"{url}/api/v1/runs", content=upload, headers=headers, timeout=60)
            assert answer.status_code in (200, 202), answer.text
            ids.append(answer.json()["id"])
        deadline = time.monotonic() + VERDICT_WAIT_S
        while True:
            states = [httpx.get(f"{url}/api/v1/runs/{i}", timeout=30).json() for i in ids]
            if all(s["status"] != "pending" for s in states) or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        proofs = [
            httpx.get(f"{url}/api/v1/cats/replay_integrity/{i}", timeout=30).json() for i in ids
        ]
        return [
            {"status": s["status"], "replay_integrity": p}
            for s, p in zip(states, proofs, strict=True)
        ]
    finally:
        import signal

        os.killpg(server.pid, signal.SIGINT)
        try:
            server.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait()
        if server.stderr is not None:
            server.stderr.close()


def test_serve_with_the_ray_executor_gives_the_local_pools_verdicts(
    cluster: str, tmp_path: Path
) -> None:
    pytest.importorskip("fastapi", reason="the server extra is not installed")
    signer = SigningKey.generate()
    good = run(TARGET, _agent, seed=5, max_turns=40)
    claims = [*good.to_json()["claimed"], {"id": "tile-2048", "turn": len(good.decisions)}]
    forged = RunRecord.model_validate({**good.to_json(), "claimed": claims})
    uploads = [sign_record(r, signer).to_bytes() for r in (good, forged)]
    public = signer.verifying_key.save(tmp_path / "signer.pub.pem")
    found = {}
    for name, extra in (("ray", ["--executor", "ray", "--ray-address", cluster]), ("local", [])):
        database = f"sqlite:///{tmp_path / name}.db"
        for command in (
            ["service", "owner", "add", "alice"],
            ["service", "key", "add", "alice", str(public)],
        ):
            done = _cli(*command, "--database-url", database)
            assert done.returncode == 0, done.stderr
        made = _cli("service", "token", "create", "alice", "--database-url", database)
        assert made.returncode == 0, made.stderr
        found[name] = _verdicts(database, extra, uploads, made.stdout.strip())
    assert [v["status"] for v in found["ray"]] == ["verified", "rejected"]
    assert found["ray"] == found["local"]
