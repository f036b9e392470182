"""``playproof matrix run`` and ``matrix report`` end to end, in real processes.

Two baseline agents on three cheap packaged targets; the report's numbers are
recomputed here from the records themselves (replayed by the test).
"""

import base64
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections import defaultdict
from itertools import combinations
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("scipy")
pytest.importorskip("matplotlib")
pytest.importorskip("gymnasium")

from playproof import verify_record, verify_signed
from playproof.matrix import SPEC_FILE, cell_of, parse_spec
from playproof.matrix._stats import bootstrap_interval, kendall_tau, kendall_w, ranks
from playproof.sign import SigningKey, VerifyingKey, parse_envelope, sign_record

SUPPORT = Path(__file__).resolve().parents[1] / "support"
EXE = [sys.executable, "-c", "from playproof.cli import main; main()"]

SPEC = """
name = "baselines"
targets = ["native/2048", "gym/cartpole", "gym/frozenlake"]
seeds = [0, 1]
max_turns = 12

[[agents]]
name = "walk"
agent = "baseline:random-walk"

[[agents]]
name = "robin"
agent = "baseline:round-robin"
"""

SLOW_SPEC = """
name = "slow"
targets = ["native/2048", "gym/frozenlake"]
seeds = [0, 1, 2, 3]
max_turns = 4

[[agents]]
name = "slow"
agent = "python:matrix_agents:slow_up"
cost_usd = 0.001

[[agents]]
name = "walk"
agent = "baseline:random-walk"
"""


def _env() -> dict[str, str]:
    path = os.pathsep.join(filter(None, [str(SUPPORT), os.environ.get("PYTHONPATH")]))
    return {**os.environ, "PYTHONPATH": path}


def cli(*args: str, cwd: Path, check: bool = True) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        [*EXE, *args], cwd=cwd, capture_output=True, text=True, timeout=240, check=False,
        env=_env(),
    )  # fmt: skip
    if check and result.returncode != 0:
        raise AssertionError(f"exit {result.returncode}\n{result.stdout}\n{result.stderr}")
    return result


def record_files(folder: Path) -> list[Path]:
    return sorted(
        p
        for p in folder.glob("*.json")
        if p.name != SPEC_FILE and not p.name.endswith(".verification.json")
    )


@pytest.fixture(scope="module")
def matrix(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished matrix run (2 agents x 3 targets x 2 seeds) and its folder."""
    home = tmp_path_factory.mktemp("matrix")
    (home / "spec.toml").write_text(SPEC)
    out = cli("--json", "matrix", "run", "spec.toml", "--out", "runs", "--key-dir", "keys",
              "--jobs", "2", cwd=home)  # fmt: skip
    summary = json.loads(out.stdout)
    assert summary["played"] == 12
    assert summary["complete"] is True
    return home


def _key(home: Path) -> VerifyingKey:
    return VerifyingKey.load(home / "keys" / "signing.pub.pem")


def test_every_cell_has_one_signed_record_that_verifies(matrix: Path) -> None:
    spec = parse_spec(SPEC)
    files = record_files(matrix / "runs")
    assert [f.name for f in files] == sorted(f"{c.id}.json" for c in spec.cells())
    for path in files:
        report = verify_signed(path.read_bytes(), _key(matrix), worker=False)
        assert report.clean, (path.name, report.failed())


def test_a_rerun_plays_nothing_and_touches_no_record(matrix: Path) -> None:
    before = {
        p.name: (p.stat().st_ino, p.stat().st_mtime_ns) for p in record_files(matrix / "runs")
    }
    out = cli("--json", "matrix", "run", "spec.toml", "--out", "runs", "--key-dir", "keys",
              cwd=matrix)  # fmt: skip
    summary = json.loads(out.stdout)
    assert (summary["played"], summary["skipped"]) == (0, 12)
    after = {p.name: (p.stat().st_ino, p.stat().st_mtime_ns) for p in record_files(matrix / "runs")}
    assert after == before


def _recompute(folder: Path, key: VerifyingKey) -> dict[str, Any]:
    """Scores, spend, ranks and agreement, from the records alone."""
    groups: dict[tuple[str, str], list[tuple[float, int, float]]] = defaultdict(list)
    for path in record_files(folder):
        envelope = path.read_bytes()
        report = verify_signed(envelope, key, worker=False)
        if not report.clean:
            continue
        statement = json.loads(base64.b64decode(json.loads(envelope)["payload"]))
        record = verify_record(statement["predicate"], worker=False)
        assert record.clean
        cell = cell_of(parse_envelope_record(envelope))
        assert cell is not None
        earnable = report.earnable
        assert earnable
        spent = statement["predicate"]["accounting"]["spent_usd"]
        groups[(cell.agent, cell.target)].append((report.earned / earnable, report.earned, spent))
    return groups


def parse_envelope_record(envelope: bytes) -> Any:
    from playproof.core.record import parse_run_record

    payload = parse_envelope(envelope).payload_bytes()
    return parse_run_record(json.loads(payload)["predicate"])


def test_the_report_numbers_are_the_records_numbers(matrix: Path) -> None:
    out = cli("--json", "matrix", "report", "runs", "--key-dir", "keys", "--jobs", "2",
              cwd=matrix)  # fmt: skip
    summary = json.loads(out.stdout)
    assert summary["verified"] == 12
    assert summary["rejected"] == []
    report = json.loads((matrix / "runs" / "report" / "report.json").read_text())
    groups = _recompute(matrix / "runs", _key(matrix))
    assert {(s["agent"], s["target"]) for s in report["scores"]} == set(groups)
    means: dict[tuple[str, str], float] = {}
    for row in report["scores"]:
        cells = groups[(row["agent"], row["target"])]
        values = [score for score, _, _ in cells]
        mean = sum(values) / len(values)
        means[(row["agent"], row["target"])] = mean
        assert row["cells"] == len(cells) == 2
        assert row["mean"] == pytest.approx(mean)
        assert (row["low"], row["high"]) == bootstrap_interval(values)
        earned = sum(e for _, e, _ in cells)
        assert row["earned"] == earned
        assert row["spent_usd"] == pytest.approx(sum(s for _, _, s in cells))
        expected_cost = row["spent_usd"] / earned if earned else None
        assert row["cost_per_milestone"] == expected_cost
    targets = ["native/2048", "gym/cartpole", "gym/frozenlake"]
    agents = ["walk", "robin"]
    for target in targets:
        expected = dict(zip(agents, ranks([means[(a, target)] for a in agents]), strict=True))
        got = {r["agent"]: r["rank"] for r in report["ranks"] if r["target"] == target}
        assert got == expected
    for row, (first, second) in zip(report["taus"], combinations(targets, 2), strict=True):
        assert (row["first"], row["second"]) == (first, second)
        tau = kendall_tau([means[(a, first)] for a in agents], [means[(a, second)] for a in agents])
        assert row["tau"] == tau
    table = [[means[(a, t)] for a in agents] for t in targets]
    assert report["kendall_w"] == pytest.approx(kendall_w(table))
    markdown = (matrix / "runs" / "report" / "report.md").read_text()
    first = report["scores"][0]
    assert f"| {first['agent']} | {first['target']} | 2 | {first['mean']:.3f} |" in markdown
    page = (matrix / "runs" / "report" / "report.html").read_text()
    assert page.count("<svg") == 3
    assert "<script" not in page
    assert 'src="http' not in page
    assert 'href="http' not in page
    assert "<link" not in page
    # The replays were stored beside the records, each for its record's digest.
    assert len(list((matrix / "runs").glob("*.verification.json"))) == 12


def _forge(path: Path, key: SigningKey) -> None:
    """Re-sign the record at ``path`` claiming one more milestone than it earned."""
    record = parse_envelope_record(path.read_bytes())
    claimed = {"id": "forged", "turn": 1}
    forged = record.model_validate(
        {**record.to_json(), "claimed": [*record.to_json()["claimed"], claimed]}
    )
    path.write_bytes(sign_record(forged, key).to_bytes())


def test_tampered_and_forged_records_are_listed_and_left_out(matrix: Path, tmp_path: Path) -> None:
    home = tmp_path / "copy"
    shutil.copytree(matrix, home)
    runs = home / "runs"
    shutil.rmtree(runs / "report")
    tampered = runs / "robin__native.2048__s0__r0.json"
    envelope = json.loads(tampered.read_bytes())
    statement = json.loads(base64.b64decode(envelope["payload"]))
    statement["predicate"]["seed"] = 5
    envelope["payload"] = base64.b64encode(json.dumps(statement).encode()).decode()
    tampered.write_text(json.dumps(envelope))
    forged = runs / "walk__native.2048__s1__r0.json"
    _forge(forged, SigningKey.load(home / "keys" / "signing.pem"))
    out = cli("--json", "matrix", "report", "runs", "--key-dir", "keys", "--jobs", "2", cwd=home)
    summary = json.loads(out.stdout)
    rejected = {r["file"]: r["reasons"] for r in summary["rejected"]}
    assert set(rejected) == {tampered.name, forged.name}
    assert any(r.startswith("signature-valid") for r in rejected[tampered.name])
    assert any(r.startswith("claims-reproduced") for r in rejected[forged.name])
    assert summary["verified"] == 10
    report = json.loads((runs / "report" / "report.json").read_text())
    cells = {(r["agent"], r["target"]): r["cells"] for r in report["scores"]}
    assert cells[("robin", "native/2048")] == 1
    assert cells[("walk", "native/2048")] == 1
    assert tampered.name in (runs / "report" / "report.md").read_text()
    groups = _recompute(runs, _key(home))
    walk = [s for s, _, _ in groups[("walk", "native/2048")]]
    row = next(r for r in report["scores"] if (r["agent"], r["target"]) == ("walk", "native/2048"))
    assert row["mean"] == pytest.approx(sum(walk) / len(walk))


def test_a_killed_run_resumes_without_replaying_finished_cells(tmp_path: Path) -> None:
    (tmp_path / "spec.toml").write_text(SLOW_SPEC)
    runs = tmp_path / "runs"
    process = subprocess.Popen(
        [*EXE, "--json", "matrix", "run", "spec.toml", "--out", "runs", "--key-dir", "keys",
         "--jobs", "1"],
        cwd=tmp_path, env=_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        start_new_session=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while len(record_files(runs)) < 2 if runs.exists() else True:
            assert process.poll() is None, "the run ended before it could be killed"
            assert time.monotonic() < deadline, "no record appeared"
            time.sleep(0.02)
    finally:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=30)
    survivors = {p.name: (p.stat().st_ino, p.stat().st_mtime_ns) for p in record_files(runs)}
    assert 2 <= len(survivors) < 16
    out = cli("--json", "matrix", "run", "spec.toml", "--out", "runs", "--key-dir", "keys",
              "--jobs", "1", cwd=tmp_path)  # fmt: skip
    summary = json.loads(out.stdout)
    assert summary["skipped"] == len(survivors)
    assert summary["played"] == 16 - len(survivors)
    final = record_files(runs)
    assert [p.name for p in final] == sorted(f"{c.id}.json" for c in parse_spec(SLOW_SPEC).cells())
    for name, identity in survivors.items():
        stat = (runs / name).stat()
        assert (stat.st_ino, stat.st_mtime_ns) == identity, f"{name} was played again"
    key = _key(tmp_path)
    for path in final:
        assert verify_signed(path.read_bytes(), key, worker=False).clean, path.name
    assert not list(runs.glob(".*.tmp"))
