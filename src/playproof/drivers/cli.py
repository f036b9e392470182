"""The one-shot command-line driver: one child process per decision.

For each decision the driver starts ``argv`` (never through a shell),
contained (:mod:`playproof._containment`: what it spawns dies with it, even
after ``setsid``) and leading a new process group, writes one JSON request
(:class:`~playproof.drivers._wire.AgentRequest`) to its stdin, closes stdin,
and reads its stdout until it exits. The reply is either JSON
``{"input": "...", "cost_usd": 0.001}`` (``reply="json"``) or a bare first word
(``reply="word"``, which requires a declared fixed cost: a cost is never
invented). A child that outlives the timeout, or whose stdout and stderr
together exceed the output cap, is killed with its whole process group.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal

from playproof._containment import ContainmentKind, describe_exit
from playproof.core.agent import Action, DecisionContext, HistoryEntry, normalize_input
from playproof.core.observation import Observation
from playproof.drivers._answer import first_word_of_line
from playproof.drivers._cancel import CancelScope
from playproof.drivers._process import (
    OutputTail,
    actor_name,
    checked_argv,
    checked_env,
    kill_group,
    launcher,
    reap,
    settle,
    spawn,
)
from playproof.drivers._wire import build_request, check_fixed_cost, parse_reply, reply_cost
from playproof.errors import DriverError

__all__ = [
    "DEFAULT_HISTORY_LIMIT",
    "DEFAULT_MAX_OUTPUT_BYTES",
    "DEFAULT_TIMEOUT_S",
    "CliDriver",
    "ReplyMode",
]

DEFAULT_TIMEOUT_S = 60.0
"""Wall time one decision (spawn, request, reply, exit) may take."""
DEFAULT_MAX_OUTPUT_BYTES = 1 << 20
"""Combined stdout + stderr bytes one decision may produce."""
DEFAULT_HISTORY_LIMIT = 8
"""Past turns included in each request."""
_READ_CHUNK = 64 * 1024

ReplyMode = Literal["json", "word"]


class _OutputBudget:
    """Bytes the child may write across stdout and stderr together; a breach kills its group."""

    def __init__(self, limit: int, process: asyncio.subprocess.Process) -> None:
        self.limit = limit
        self.used = 0
        self.breached = False
        self._process = process

    def spend(self, size: int) -> bool:
        """Charge ``size`` bytes; False (and the group killed) once over the limit."""
        self.used += size
        if self.used > self.limit and not self.breached:
            self.breached = True
            kill_group(self._process)
        return not self.breached


class CliDriver:
    """Run a command once per decision: JSON request on stdin, JSON or one word on stdout."""

    kind = "cli"

    def __init__(
        self,
        argv: Sequence[str],
        *,
        reply: ReplyMode = "json",
        fixed_cost_usd: float | None = None,
        vision: bool = False,
        history_limit: int = DEFAULT_HISTORY_LIMIT,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        max_output_bytes: int = DEFAULT_MAX_OUTPUT_BYTES,
        cwd: str | os.PathLike[str] | None = None,
        env: Mapping[str, str] | None = None,
        name: str | None = None,
    ) -> None:
        self._argv = checked_argv(argv)
        if reply not in ("json", "word"):
            raise DriverError(f"reply mode must be 'json' or 'word', got {reply!r}")
        check_fixed_cost(fixed_cost_usd)
        if reply == "word" and fixed_cost_usd is None:
            raise DriverError(
                "a first-word agent cannot report its cost: declare fixed_cost_usd "
                "(0.0 for a program that costs nothing) or use reply='json'"
            )
        if not timeout_s > 0 or max_output_bytes < 1 or history_limit < 0:
            raise DriverError("timeout, output cap and history limit must be positive")
        self._reply: ReplyMode = reply
        self._fixed_cost = fixed_cost_usd
        self._vision = vision
        self._history_limit = history_limit
        self._timeout_s = timeout_s
        self._max_output = max_output_bytes
        self._cwd = cwd
        self._env = checked_env(env)
        self.id = actor_name(self._argv, name)
        self.label = f"{self.kind}:{self.id}"
        """The actor as ``kind:id``, for messages (the record keeps kind and id apart)."""
        self._decisions = 0
        self._failures = 0
        self._containment: ContainmentKind | None = None
        self._scope = CancelScope()

    def __repr__(self) -> str:
        return f"CliDriver(id={self.id!r}, reply={self._reply!r})"

    async def act(
        self, observation: Observation, history: Sequence[HistoryEntry], context: DecisionContext
    ) -> Action:
        """Run the command once and turn its reply into an input and a cost."""
        request = build_request(
            observation,
            history,
            context,
            vision=self._vision,
            history_limit=self._history_limit,
        )
        try:
            stdout = await self._scope.run(self._run(request + b"\n"), context.cancel)
        except DriverError:
            self._failures += 1
            raise
        self._decisions += 1
        return self._interpret(stdout, context.vocabulary)

    def provenance(self) -> dict[str, Any]:
        """Health counters (decisions answered, runs that failed) and how agents were contained."""
        report: dict[str, Any] = {"decisions": self._decisions, "failures": self._failures}
        if self._containment is not None:
            report["containment"] = self._containment
        return report

    async def aclose(self) -> None:
        """Nothing outlives a decision; only the cancellation watcher is stopped."""
        self._scope.close()

    def _interpret(self, stdout: bytes, vocabulary: Sequence[str]) -> Action:
        if self._reply == "word":
            text = stdout.decode("utf-8", errors="replace")
            return Action(first_word_of_line(text, vocabulary), self._fixed_cost)
        reply = parse_reply(stdout.strip(), source=self.label)
        cost = reply_cost(reply, self._fixed_cost, source=self.label)
        return Action(normalize_input(reply.input, vocabulary), cost)

    async def _run(self, request: bytes) -> bytes:
        contain = await launcher()
        self._containment = contain.kind
        process = await spawn(self._argv, cwd=self._cwd, env=self._env, contain=contain)
        budget = _OutputBudget(self._max_output, process)
        stdout = bytearray()
        stderr = OutputTail()
        pumps = (
            asyncio.ensure_future(_feed(process, request)),
            asyncio.ensure_future(_drain(process.stdout, stdout.extend, budget)),
            asyncio.ensure_future(_drain(process.stderr, stderr.add, budget)),
        )
        try:
            async with asyncio.timeout(self._timeout_s):
                # A breach kills the group, so the pumps reach EOF either way.
                await asyncio.wait(pumps)
                status = await process.wait()
        except TimeoutError:
            raise DriverError(
                f"{self.label} did not answer within {self._timeout_s} s; it was killed"
                + stderr.suffix()
            ) from None
        finally:
            # Kill the group even after a clean exit: nothing the agent spawned may linger
            # (without a PID namespace this is the only cleanup there is).
            await reap(process)
            await settle(pumps, process)
        if budget.breached:
            raise DriverError(
                f"{self.label} wrote more than {self._max_output} bytes; it was killed"
                + stderr.suffix()
            )
        if status != 0:
            ended = describe_exit(status, contained=contain.contained)
            raise DriverError(f"{self.label} {ended}{stderr.suffix()}")
        return bytes(stdout)


async def _feed(process: asyncio.subprocess.Process, request: bytes) -> None:
    """Write the request and close stdin; an agent that does not read it is not an error."""
    stdin = process.stdin
    if stdin is None:  # pragma: no cover - spawn always pipes stdin
        return
    try:
        stdin.write(request)
        await stdin.drain()
    except (BrokenPipeError, ConnectionResetError):
        pass
    finally:
        stdin.close()


async def _drain(
    stream: asyncio.StreamReader | None, sink: Callable[[bytes], object], budget: _OutputBudget
) -> None:
    """Read a stream to EOF in bounded chunks; after a breach, bytes are read and dropped."""
    if stream is None:  # pragma: no cover - spawn always pipes stdout and stderr
        return
    while chunk := await stream.read(_READ_CHUNK):
        if budget.spend(len(chunk)):
            sink(chunk)
