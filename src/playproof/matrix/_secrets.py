"""Refuse a matrix spec that carries a secret value instead of an environment variable's name.

A spec is a file people commit and share. An API key belongs in the
environment; the spec names the variable (``api_key_env = "OPENAI_API_KEY"``).
:func:`secret_problems` walks the parsed document before it is validated and
names every field whose key says "secret" or whose value looks like one.

>>> secret_problems({"agents": [{"agent": "openai:m", "api_key": "abc"}]})[0][:46]
'agents[0].api_key: a field named like a secret'
>>> secret_problems({"agents": [{"agent": "openai:m", "api_key_env": "OPENAI_API_KEY"}]})
[]
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import parse_qsl, urlsplit

__all__ = ["looks_like_secret", "secret_problems"]

_SECRET_KEY = re.compile(
    r"(api[_-]?key|apikey|token|secret|passw(or)?d|passwd|authorization|bearer|credential"
    r"|private[_-]?key|cookie)",
    re.IGNORECASE,
)
"""Field names that mean "a secret goes here"."""
_ALLOWED_KEYS = frozenset({"api_key_env"})
"""Fields whose name matches :data:`_SECRET_KEY` but that hold a variable's name."""

_TOKEN_PATTERNS = (
    re.compile(r"\bsk-[A-Za-z0-9_-]{12,}"),  # OpenAI / Anthropic style keys
    re.compile(r"\b(gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})"),
    re.compile(r"\bxox[abprs]-[A-Za-z0-9-]{10,}"),  # Slack
    re.compile(r"\bAKIA[0-9A-Z]{16}\b"),  # AWS access key id
    re.compile(r"\bAIza[0-9A-Za-z_-]{30,}"),  # Google API key
    re.compile(r"\bhf_[A-Za-z0-9]{20,}"),  # Hugging Face
    re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\."),  # a JWT
    re.compile(r"\bBearer\s+\S{8,}", re.IGNORECASE),
    re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----"),
    re.compile(r"--?(api[_-]?key|token|secret|password)[= ]\s*\S+", re.IGNORECASE),
)
"""Shapes of well-known credentials, and command-line flags that carry one."""
_OPAQUE = re.compile(r"[A-Za-z0-9_\-+/=]{32,}")
_QUERY_SECRET = re.compile(r"(key|token|secret|sig|signature|password|auth)", re.IGNORECASE)


def _random_looking(text: str) -> bool:
    """A long unbroken run of letters of both cases and digits: how generated keys look."""
    for match in _OPAQUE.finditer(text):
        run = match.group()
        kinds = (str.isupper, str.islower, str.isdigit)
        if all(any(kind(c) for c in run) for kind in kinds):
            return True
    return False


def _url_secret(text: str) -> bool:
    """A URL with credentials in it, or a query parameter named like a key."""
    if "://" not in text:
        return False
    try:
        parts = urlsplit(text.strip())
        query = parse_qsl(parts.query, keep_blank_values=True)
        has_credentials = parts.username is not None or parts.password is not None
    except ValueError:
        return False
    return has_credentials or any(_QUERY_SECRET.search(name) for name, _ in query)


def looks_like_secret(text: str) -> bool:
    """True when ``text`` looks like a credential rather than a name, a path or a price."""
    if any(pattern.search(text) for pattern in _TOKEN_PATTERNS):
        return True
    return _url_secret(text) or _random_looking(text)


def _walk(value: Any, where: str, found: list[str]) -> None:
    if isinstance(value, dict):
        for key, item in value.items():
            name = str(key)
            path = f"{where}.{name}" if where else name
            if _SECRET_KEY.search(name) and name not in _ALLOWED_KEYS:
                found.append(
                    f"{path}: a field named like a secret; put the value in an environment "
                    "variable and name it in api_key_env"
                )
                continue
            _walk(item, path, found)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            _walk(item, f"{where}[{index}]", found)
    elif isinstance(value, str) and looks_like_secret(value):
        found.append(
            f"{where}: the value looks like a secret (a key, token or password); keep it in an "
            "environment variable and name the variable in api_key_env"
        )


def secret_problems(document: Any) -> list[str]:
    """Every field of a parsed spec that holds, or is named for, a secret value (empty: none)."""
    found: list[str] = []
    _walk(document, "", found)
    return found
