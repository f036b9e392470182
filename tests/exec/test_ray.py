"""The Ray executor against a real two-node Ray cluster on 127.0.0.1 that the tests start.

Calibration and batch verification on Ray give exactly the local pool's
results; a worker process that dies mid-job is retried, reported, and the
job's results are still identical.
"""

from __future__ import annotations

import json
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
from playproof.core.baselines import baseline_inputs
from playproof.errors import NotSupportedError
from playproof.exec import (
    GameSpec,
    calibrate_target,
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
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with LocalRayCluster(tmp_path_factory.mktemp("ray")) as address:
        yield address


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
