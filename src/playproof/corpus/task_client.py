"""The agent's side of the grader channel: ask the task's grader to run the tests.

When a task is served (``playproof task serve``), the grader process holds the
answers, the grader key and the reward state, and listens on the task's
``grader.sock``. This client sends one bounded request and prints the bounded
reply; it can see nothing else. It uses the standard library only, so the
set-up copies it into the task folder as ``run-tests`` and the agent's shell
needs no playproof (and so no answers) at all::

    ./run-tests [--filter TEXT] [--json]
    ./run-tests --progress [--json]

``playproof task run-tests`` and ``task progress`` use the same channel when
the task folder holds a ``grader.sock``.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import sys
import time
from typing import Any

__all__ = [
    "MAX_FILTER_CHARS",
    "ChannelError",
    "MAX_REPLY_BYTES",
    "MAX_REQUEST_BYTES",
    "SOCKET_NAME",
    "WAIT_SECONDS",
    "ask",
    "main",
    "render",
]

SOCKET_NAME = "grader.sock"
"""The grader's socket, in the task folder."""
MAX_REQUEST_BYTES = 4096
"""The largest request line the grader reads."""
MAX_REPLY_BYTES = 256 * 1024
"""The largest reply line the client reads."""
MAX_FILTER_CHARS = 200
"""The longest ``--filter`` text a request may carry."""
WAIT_SECONDS = 2 * 86400.0
"""How long the client waits for a reply: above a task's largest build plus grading limits."""
CONNECT_SECONDS = 10.0
"""How long connecting may take (the grader serves one request at a time)."""


class ChannelError(Exception):
    """The grader could not be reached, or its reply was not readable."""


def ask(socket_path: str, op: str, failure_filter: str | None = None) -> dict[str, Any]:
    """Send one request to the grader at ``socket_path``; its reply as a dict."""
    request: dict[str, Any] = {"format": 1, "op": op}
    if failure_filter is not None:
        request["filter"] = failure_filter[:MAX_FILTER_CHARS]
    line = json.dumps(request).encode("utf-8") + b"\n"
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as channel:
        channel.settimeout(CONNECT_SECONDS)
        try:
            channel.connect(socket_path)
        except OSError as exc:
            raise ChannelError(
                f"the task's grader is not reachable at {socket_path}: {exc}"
            ) from exc
        with contextlib.suppress(OSError):  # a refusal may come before the request is read
            channel.sendall(line)
        deadline = time.monotonic() + WAIT_SECONDS
        reply = bytearray()
        while not reply.endswith(b"\n"):
            left = deadline - time.monotonic()
            if left <= 0:
                raise ChannelError("the grader sent no reply in time")
            channel.settimeout(min(left, 60.0))
            try:
                chunk = channel.recv(65536)
            except TimeoutError:
                continue
            except OSError as exc:
                raise ChannelError(f"the grader's reply broke off: {exc}") from exc
            if not chunk:
                break
            reply += chunk
            if len(reply) > MAX_REPLY_BYTES:
                raise ChannelError(f"the grader's reply is over {MAX_REPLY_BYTES} bytes")
    try:
        parsed = json.loads(reply.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise ChannelError("the grader's reply is not JSON") from exc
    if not isinstance(parsed, dict):
        raise ChannelError("the grader's reply is not a JSON object")
    return parsed


def render(reply: dict[str, Any]) -> str:
    """The reply as the lines ``playproof task run-tests`` prints."""
    if not reply.get("ok"):
        return f"error: {reply.get('error', 'the grader refused the request')}"
    report = reply.get("report") or {}
    if reply.get("op") == "progress":
        return (
            f"{report.get('passed')} of {report.get('denominator')} pass; "
            f"cumulative reward {report.get('cumulative', 0):+d}"
        )
    status = report.get("status")
    if status == "built":
        return "built; feedback is disabled in this task (no grade, no reward)"
    if status != "graded":
        return f"{status}; reward 0\n{report.get('build_log', '')}"
    lines = [f"FAIL {f['case_id']}: {f['reason']}" for f in report.get("failures", [])]
    lines.append(
        f"{report.get('passed')} of {report.get('denominator')} pass; "
        f"reward {report.get('reward', 0):+d}, cumulative {report.get('cumulative', 0):+d}"
        f"{'; FINISHED' if report.get('finished') else ''}; all results in last.tsv"
    )
    if not report.get("trusted", True):
        lines.append("untrusted grade: reward 0")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """``run-tests [--task DIR] [--filter TEXT] [--progress] [--json]``; exit 1 on an error."""
    args = list(sys.argv[1:] if argv is None else argv)
    folder = os.path.dirname(os.path.abspath(__file__))
    op, failure_filter, as_json = "run-tests", None, False
    while args:
        flag = args.pop(0)
        if flag == "--progress":
            op = "progress"
        elif flag == "--json":
            as_json = True
        elif flag in ("--filter", "--task") and args:
            value = args.pop(0)
            if flag == "--filter":
                failure_filter = value
            else:
                folder = value
        else:
            sys.stderr.write(
                "usage: run-tests [--task DIR] [--filter TEXT] [--progress] [--json]\n"
            )
            return 2
    try:
        reply = ask(os.path.join(folder, SOCKET_NAME), op, failure_filter)
    except ChannelError as exc:
        sys.stderr.write(f"error: {exc}\n")
        return 1
    sys.stdout.write((json.dumps(reply) if as_json else render(reply)) + "\n")
    return 0 if reply.get("ok") else 1


if __name__ == "__main__":
    sys.exit(main())
