"""Hostile input to the executors: malformed cluster addresses, oversized and missing records."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from playproof.errors import NotSupportedError, RunError, TargetError
from playproof.exec import check_executor, check_grading_executor, verify_many
from playproof.exec._ray import MAX_ADDRESS_CHARS, split_address
from playproof.sign import MAX_ENVELOPE_BYTES, SigningKey

EXE = [sys.executable, "-c", "from playproof.cli import main; main()"]
BAD_ADDRESSES = [
    "10.0.0.5",
    "host:0",
    "host:99999",
    "a b:1",
    ":6379",
    "host:6379;rm -rf /",
    "ray://host:10001",
    "h" * MAX_ADDRESS_CHARS + ":1",
    "host:+1",
]


@pytest.mark.parametrize("address", BAD_ADDRESSES)
def test_a_malformed_address_is_refused_before_any_cluster_is_touched(address: str) -> None:
    with pytest.raises(RunError, match="HOST:PORT"):
        split_address(address)


def test_addresses_that_are_fine() -> None:
    assert split_address("127.0.0.1:6379") == ("127.0.0.1", 6379)
    assert split_address("ray-head.default.svc:6379") == ("ray-head.default.svc", 6379)
    assert split_address("[::1]:6379") == ("[::1]", 6379)


def test_an_address_without_ray_an_empty_pool_and_unknown_executors_are_refused() -> None:
    with pytest.raises(RunError, match="needs --executor ray"):
        check_executor("local", None, "127.0.0.1:6379")
    with pytest.raises(RunError, match="at least 1"):
        check_executor("local", 0)
    with pytest.raises(TargetError, match="unknown executor"):
        check_executor("cloud")


def test_grading_on_ray_without_the_extra_names_the_extra_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)
    with pytest.raises(NotSupportedError, match=r"pip install 'playproof\[ray\]'"):
        check_grading_executor("ray")
    with pytest.raises(RunError, match="needs --executor ray"):
        check_grading_executor("local", "127.0.0.1:6379")
    check_grading_executor("serial")


def test_a_record_over_the_bound_is_one_rejected_verdict(tmp_path: Path) -> None:
    big = tmp_path / "big.json"
    big.write_bytes(b" " * (MAX_ENVELOPE_BYTES + 1))
    [verdict] = verify_many([big], [SigningKey.generate().verifying_key], executor="serial")
    assert not verdict.report.clean
    assert verdict.report.checks[0].id == "record-well-formed"


def test_a_malformed_address_on_the_command_line_is_one_line_and_exit_3(tmp_path: Path) -> None:
    (tmp_path / "r.json").write_text("{}")
    (tmp_path / "s.json").write_text("{}")
    done = subprocess.run(
        [*EXE, "verify", "r.json", "s.json", "--executor", "ray", "--ray-address", "h:1;x"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 3
    assert len(done.stderr.strip().splitlines()) == 1
    assert "HOST:PORT" in done.stderr or "pip install 'playproof[ray]'" in done.stderr


@pytest.mark.parametrize(
    ("options", "said"),
    [
        (["--executor", "serial"], "serve replays on --executor local or ray"),
        (["--ray-address", "127.0.0.1:6379"], "--ray-address needs --executor ray"),
        (["--executor", "ray", "--ray-address", "h:1;x"], "HOST:PORT"),
    ],
)
def test_serve_refuses_an_executor_it_cannot_use_before_touching_the_database(
    tmp_path: Path, options: list[str], said: str
) -> None:
    database = tmp_path / "service.db"
    done = subprocess.run(
        [*EXE, "serve", "--database-url", f"sqlite:///{database}", *options],
        cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 3
    assert len(done.stderr.strip().splitlines()) == 1
    assert said in done.stderr
    assert not database.exists()
