"""The recorder's provenance: the git checkout (bounded, never fatal) and secret-free settings."""

import subprocess
from pathlib import Path

import pytest

from playproof import _provenance
from playproof._provenance import public_agent, public_url, source_checkout
from playproof.cli._agents import AgentOptions, run_settings

ROOT = Path(_provenance.__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("spec", "recorded"),
    [
        ("reference", "reference"),
        ("openai:gpt-4o-mini", "openai:gpt-4o-mini"),
        ("cli:python agent.py --api-key sk-live-123", "cli:python (3 arguments not recorded)"),
        ("cli:'python agent.py --api-key sk-live-123'", "cli:python (3 arguments not recorded)"),
        ("session:node bot.js", "session:node (1 argument not recorded)"),
        ("cli:/opt/bin/agent --token=abc", "cli:agent (1 argument not recorded)"),
        ("cli:agent", "cli:agent"),
        ("cli:'unbalanced", "cli:(command not recorded)"),
    ],
)
def test_agent_specs_lose_command_arguments(spec: str, recorded: str) -> None:
    assert public_agent(spec) == recorded


@pytest.mark.parametrize(
    ("url", "recorded"),
    [
        ("https://user:pw@api.example.com/v1?key=abc#frag", "https://api.example.com/v1"),
        ("http://127.0.0.1:8080/v1", "http://127.0.0.1:8080/v1"),
        ("http://[::1]:9000/v1", "http://[::1]:9000/v1"),
        ("http://host:notaport/", "(unparsable URL not recorded)"),
    ],
)
def test_base_urls_lose_credentials_and_queries(url: str, recorded: str) -> None:
    assert public_url(url) == recorded


def test_run_settings_never_hold_a_key_or_its_variable() -> None:
    settings = run_settings(
        "openai:gpt-4o",
        AgentOptions(
            base_url="https://k:secret-token@api.example.com/v1?api_key=secret-token",
            api_key_env="MY_SECRET_VAR",
            price_input=0.15,
            price_output=0.6,
            vision=True,
            timeout_s=30.0,
        ),
    )
    text = settings.model_dump_json()
    assert "secret-token" not in text
    assert "MY_SECRET_VAR" not in text
    assert settings.options == {
        "base_url": "https://api.example.com/v1",
        "price_input": 0.15,
        "price_output": 0.6,
    }
    assert settings.vision is True
    assert settings.agent_timeout_s == 30.0


@pytest.mark.skipif(not (ROOT / ".git").exists(), reason="not a git checkout")
def test_the_checkout_commit_is_the_one_git_reports() -> None:
    found = source_checkout.__wrapped__()
    head = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert found is not None
    assert found.commit == head


def test_without_git_the_checkout_is_unknown_not_an_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(_provenance.shutil, "which", lambda _name: None)
    assert source_checkout.__wrapped__() is None


def test_a_hanging_git_is_cut_off(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    sleeper = tmp_path / "git"
    sleeper.write_text("#!/bin/sh\nexec sleep 30\n")
    sleeper.chmod(0o755)
    monkeypatch.setattr(_provenance.shutil, "which", lambda _name: str(sleeper))
    monkeypatch.setattr(_provenance, "GIT_TIMEOUT_S", 0.2)
    assert _provenance._git(tmp_path, "rev-parse", "HEAD") is None


def test_an_installed_copy_inside_another_repository_is_not_that_repository(
    tmp_path: Path,
) -> None:
    (tmp_path / ".git").mkdir()
    package = tmp_path / "venv" / "site-packages" / "playproof" / "__init__.py"
    assert _provenance._checkout_root(package) is None
    assert _provenance._checkout_root(tmp_path / "src" / "playproof" / "__init__.py") == tmp_path
