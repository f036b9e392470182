"""``playproof log verify inclusion`` and ``... consistency``, run as a user runs them."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import playproof
from playproof.drivers import ScriptedDriver
from playproof.sign import SigningKey, record_digest, sign_record
from playproof.targets import get_target
from playproof.transparency import (
    MerkleTree,
    consistency_proof_document,
    inclusion_proof_document,
    record_leaf_hash,
    sign_tree_head,
)

EXE = [sys.executable, "-c", "from playproof.cli import main; main()"]


def cli(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*EXE, "log", "verify", *args], cwd=folder, capture_output=True, text=True, timeout=120,
        check=False,
    )  # fmt: skip


def _write(folder: Path, name: str, document: object) -> str:
    (folder / name).write_text(json.dumps(document))
    return name


@pytest.fixture(scope="module")
def log(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A folder with a signed record at leaf 2 of a 6-leaf log, its heads, proofs and key."""
    folder = tmp_path_factory.mktemp("log-cli")
    target = get_target("native/2048")
    record = playproof.run(target, ScriptedDriver(target.reference[:10]), max_turns=10)
    record_key, log_key = SigningKey.generate(), SigningKey.generate()
    (folder / "run.json").write_bytes(sign_record(record, record_key).to_bytes())
    digest = record_digest(record)
    digests = [f"{i:064x}" for i in range(1, 3)] + [digest] + [f"{i:064x}" for i in range(3, 6)]
    tree = MerkleTree(record_leaf_hash(d) for d in digests)
    log_key.verifying_key.save(folder / "log.pub.pem")
    SigningKey.generate().verifying_key.save(folder / "other.pub.pem")
    for size in (3, 6):
        head = sign_tree_head(log_key, tree_size=size, root_hash=tree.root(size), timestamp=size)
        _write(folder, f"head{size}.json", head.to_json())
    _write(folder, "proof.json", inclusion_proof_document(tree, log_key.key_id, 2, 6).to_json())
    _write(folder, "cons.json", consistency_proof_document(tree, log_key.key_id, 3, 6).to_json())
    return folder, digest


def _inclusion(folder: Path, *extra: str, proof: str = "proof.json") -> list[str]:
    return [
        "inclusion",
        "--head",
        "head6.json",
        "--proof",
        proof,
        "--log-key",
        "log.pub.pem",
        *extra,
    ]


def test_inclusion_of_a_record_file_and_of_its_digest(log: tuple[Path, str]) -> None:
    folder, digest = log
    by_file = cli(folder, *_inclusion(folder, "--record", "run.json"))
    assert by_file.returncode == 0, by_file.stderr
    assert "inclusion proof holds" in by_file.stdout
    by_digest = cli(folder, *_inclusion(folder, "--leaf-digest", digest, "--json"))
    assert by_digest.returncode == 0
    shown = json.loads(by_digest.stdout)
    assert shown["valid"] is True
    assert shown["record_digest"] == digest
    assert shown["failed_step"] is None


def test_a_record_that_is_not_in_the_log_exits_1_naming_the_step(log: tuple[Path, str]) -> None:
    folder, _ = log
    result = cli(folder, *_inclusion(folder, "--leaf-digest", "ab" * 32))
    assert result.returncode == 1
    assert len(result.stdout.strip().splitlines()) == 1
    assert "FAILED at root-matches" in result.stdout


def test_a_tampered_proof_exits_1(log: tuple[Path, str]) -> None:
    folder, digest = log
    proof = json.loads((folder / "proof.json").read_text())
    first = proof["inclusion_path"][0]
    proof["inclusion_path"][0] = ("0" if first[0] != "0" else "1") + first[1:]
    _write(folder, "tampered.json", proof)
    result = cli(
        folder, *_inclusion(folder, "--leaf-digest", digest, "--json", proof="tampered.json")
    )
    assert result.returncode == 1
    assert json.loads(result.stdout)["failed_step"] == "root-matches"


def test_a_head_from_another_log_key_exits_1(log: tuple[Path, str]) -> None:
    folder, digest = log
    args = _inclusion(folder, "--leaf-digest", digest)
    args[args.index("log.pub.pem")] = "other.pub.pem"
    result = cli(folder, *args)
    assert result.returncode == 1
    assert "log-id-matches" in result.stdout


@pytest.mark.parametrize("content", ["{", '{"log_id": 5}', "x" * 20_000])
def test_a_malformed_proof_exits_3(log: tuple[Path, str], content: str) -> None:
    folder, digest = log
    (folder / "bad.json").write_text(content)
    result = cli(folder, *_inclusion(folder, "--leaf-digest", digest, proof="bad.json"))
    assert result.returncode == 3
    assert result.stderr.startswith("error:")
    assert "Traceback" not in result.stderr


def test_bad_input_exits_3(log: tuple[Path, str]) -> None:
    folder, digest = log
    missing = cli(folder, *_inclusion(folder, "--leaf-digest", digest, proof="nope.json"))
    assert missing.returncode == 3
    not_hex = cli(folder, *_inclusion(folder, "--leaf-digest", "xyz"))
    assert not_hex.returncode == 3
    assert "leaf-well-formed" in not_hex.stderr
    (folder / "notarecord.json").write_text('{"hello": 1}')
    not_record = cli(folder, *_inclusion(folder, "--record", "notarecord.json"))
    assert not_record.returncode == 3
    args = _inclusion(folder, "--leaf-digest", digest)
    args[args.index("log.pub.pem")] = "head6.json"
    assert cli(folder, *args).returncode == 3


def test_exactly_one_of_digest_and_record_is_asked_for(log: tuple[Path, str]) -> None:
    folder, digest = log
    for extra in ([], ["--leaf-digest", digest, "--record", "run.json"]):
        result = cli(folder, *_inclusion(folder, *extra))
        assert result.returncode == 2
        assert "exactly one of --leaf-digest" in result.stderr


def _consistency(old: str, new: str, proof: str = "cons.json") -> list[str]:
    return ["consistency", "--old", old, "--new", new, "--proof", proof, "--log-key", "log.pub.pem"]


def test_consistency_holds_and_json_says_so(log: tuple[Path, str]) -> None:
    folder, _ = log
    result = cli(folder, *_consistency("head3.json", "head6.json"))
    assert result.returncode == 0, result.stderr
    assert "consistency proof holds" in result.stdout
    shown = json.loads(cli(folder, *_consistency("head3.json", "head6.json"), "--json").stdout)
    assert shown == {**shown, "proof": "consistency", "valid": True}


def test_swapped_heads_or_a_tampered_consistency_proof_exit_1(log: tuple[Path, str]) -> None:
    folder, _ = log
    swapped = cli(folder, *_consistency("head6.json", "head3.json"))
    assert swapped.returncode == 1
    assert "proof-matches-head" in swapped.stdout
    proof = json.loads((folder / "cons.json").read_text())
    proof["consistency_path"].reverse()
    _write(folder, "cons-bad.json", proof)
    tampered = cli(folder, *_consistency("head3.json", "head6.json", "cons-bad.json"))
    assert tampered.returncode == 1
    assert "FAILED at" in tampered.stdout


def test_a_hostile_reason_is_printed_as_text(log: tuple[Path, str]) -> None:
    folder, _ = log
    proof = json.loads((folder / "cons.json").read_text())
    proof["log_id"] = "[red]\x1b[2J"
    _write(folder, "cons-markup.json", proof)
    result = cli(folder, *_consistency("head3.json", "head6.json", "cons-markup.json"))
    assert result.returncode == 3
    assert "\x1b" not in result.stderr
    assert "\n" not in result.stderr.strip()


@pytest.mark.parametrize(
    "command",
    [["log"], ["log", "verify"], ["log", "verify", "inclusion"], ["log", "verify", "consistency"]],
)
def test_help_is_readable_at_80_columns(tmp_path: Path, command: list[str]) -> None:
    result = subprocess.run(
        [*EXE, *command, "--help"], cwd=tmp_path, capture_output=True,
        text=True, timeout=120, check=False, env={**os.environ, "COLUMNS": "80"},
    )  # fmt: skip
    assert result.returncode == 0
    assert "…" not in result.stdout
    commands = result.stdout.partition("Commands:")[2]
    assert not any(line.endswith("...") for line in commands.splitlines())  # no cut summary
    assert all(len(line) <= 80 for line in result.stdout.splitlines())
    if len(command) == 3:
        assert "--json" in result.stdout
