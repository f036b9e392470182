"""The Ray executor: whole episodes as tasks on a Ray cluster (``pip install 'playproof[ray]'``).

:class:`RayExecutor` is a :class:`concurrent.futures.Executor`, so every job
that runs on the local pool runs on Ray unchanged: each call is one Ray task
(a whole episode or a whole record, never a single step), its result comes
back as the very object the local pool returns. Without an address it starts
a Ray of its own on this machine and stops it on shutdown; with
``HOST:PORT`` it joins a running cluster and leaves it running.

A task whose worker process (or node) dies is sent again, up to
:data:`TASK_RETRIES` times, and every retry is reported through
``on_retry``. Ray's own ``max_retries`` is set to 0 for that: Ray retries
silently (a task cannot tell which attempt it is), so the executor does the
retrying itself and can say so. An exception raised by the task's own code
is never retried: it is the job's answer. Shutting down (Ctrl-C included)
cancels every task still queued or running.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import threading
from collections.abc import Callable
from concurrent.futures import Executor, Future, InvalidStateError
from dataclasses import dataclass, field
from importlib import import_module
from types import ModuleType
from typing import Any

from playproof.errors import NotSupportedError, RunError

__all__ = [
    "NODE_CHECK_TIMEOUT_S",
    "TASK_RETRIES",
    "NodeProbe",
    "RayExecutor",
    "check_nodes",
    "probe_nodes",
    "require_on_every_node",
    "require_ray",
    "split_address",
]

TASK_RETRIES = 3
"""Times a task is sent again after its worker or node died, before the job fails."""
NODE_CHECK_TIMEOUT_S = 60.0
"""Seconds the per-node checks may take together."""
MAX_ADDRESS_CHARS = 256
"""The longest ``HOST:PORT`` accepted."""
INSTALL_HINT = "pip install 'playproof[ray]'"

_ADDRESS = re.compile(r"^(?P<host>[A-Za-z0-9._-]+|\[[0-9A-Fa-f:]+\]):(?P<port>[0-9]{1,5})$")

log = logging.getLogger("playproof.exec")


def require_ray() -> ModuleType:
    """The ``ray`` module, or a NotSupportedError naming the extra to install."""
    try:
        return import_module("ray")
    except ImportError as exc:
        raise NotSupportedError(
            f"the Ray executor needs the ray extra ({exc.name or 'ray'} is missing): {INSTALL_HINT}"
        ) from exc


def split_address(address: str) -> tuple[str, int]:
    """``HOST:PORT`` of a Ray cluster's head, checked; anything else is a RunError."""
    match = _ADDRESS.match(address) if len(address) <= MAX_ADDRESS_CHARS else None
    port = int(match["port"]) if match else 0
    if match is None or not 0 < port < 65536:
        raise RunError(
            f"--ray-address must be HOST:PORT of a Ray head (e.g. 10.0.0.5:6379), not {address!r}"
        )
    return match["host"], port


def _invoke(fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """The one Ray task: call ``fn`` in a Ray worker process."""
    return fn(*args, **kwargs)


@dataclass
class _Task:
    future: Future[Any]
    fn: Callable[..., Any]
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    number: int
    attempts: int = 0
    ref: Any = field(default=None)


class RayExecutor(Executor):
    """Runs each submitted call as a Ray task; see the module docstring."""

    def __init__(
        self,
        *,
        address: str | None = None,
        cpus: int | None = None,
        retries: int = TASK_RETRIES,
        on_retry: Callable[[str], None] | None = None,
    ) -> None:
        ray = require_ray()
        self._ray = ray
        self._retries = retries
        self._on_retry = on_retry
        # Reentrant: an attempt that ends at once settles inside the submit that sent it.
        self._lock = threading.RLock()
        self._live: dict[int, _Task] = {}
        self._submitted = 0
        self._retried = 0
        self._closed = False
        self._owns = not ray.is_initialized()
        if self._owns:
            # No usage statistics leave this machine unless the user asked for them.
            os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
            options: dict[str, Any] = {
                "include_dashboard": False,
                "log_to_driver": False,
                "logging_level": logging.WARNING,
            }
            if address is not None:
                host, port = split_address(address)
                options["address"] = f"{host}:{port}"
            else:
                options["num_cpus"] = cpus
            try:
                ray.init(**options)
            except (ConnectionError, RuntimeError, ValueError) as exc:
                where = f"the Ray cluster at {address}" if address else "a local Ray"
                raise RunError(f"cannot start or join {where}: {exc}") from exc
        self._remote = ray.remote(num_cpus=1, max_retries=0)(_invoke)
        cluster_cpus = int(ray.cluster_resources().get("CPU", 1))
        self._width = max(1, min(cpus, cluster_cpus) if cpus else cluster_cpus)
        self._lost = (
            ray.exceptions.WorkerCrashedError,
            ray.exceptions.NodeDiedError,
            ray.exceptions.LocalRayletDiedError,
            ray.exceptions.ObjectLostError,
        )

    @property
    def width(self) -> int:
        """Tasks the cluster runs at once (its CPUs, or fewer if asked)."""
        return self._width

    @property
    def retried(self) -> int:
        """Tasks sent again so far because their worker or node died."""
        return self._retried

    @property
    def submitted(self) -> int:
        """Calls submitted so far (retries not counted)."""
        return self._submitted

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        """Send ``fn(*args, **kwargs)`` to the cluster as one task."""
        with self._lock:
            if self._closed:
                raise RuntimeError("cannot submit to a Ray executor after shutdown")
            self._submitted += 1
            task = _Task(Future(), fn, args, kwargs, self._submitted)
            self._live[task.number] = task
            self._send(task)
        return task.future

    def _send(self, task: _Task) -> None:
        """Start one attempt of ``task`` (called with the lock held)."""
        task.attempts += 1
        task.ref = self._remote.remote(task.fn, task.args, task.kwargs)
        attempt = task.attempts
        task.ref.future().add_done_callback(lambda done: self._finished(task, attempt, done))

    def _finished(self, task: _Task, attempt: int, done: Future[Any]) -> None:
        """One attempt ended (on Ray's thread): retry a lost worker, else settle the future."""
        with self._lock:
            if self._closed or task.future.done() or attempt != task.attempts:
                return
            error = None if done.cancelled() else done.exception()
            if isinstance(error, self._lost) and task.attempts <= self._retries:
                self._retried += 1
                notice = (
                    f"task {task.number} lost its Ray worker ({type(error).__name__}); "
                    f"sent again (attempt {task.attempts + 1} of {self._retries + 1})"
                )
                self._send(task)
            else:
                notice = ""
                del self._live[task.number]
        if notice:
            log.warning(notice)
            if self._on_retry is not None:
                self._on_retry(notice)
            return
        with contextlib.suppress(InvalidStateError):  # cancelled by the caller meanwhile
            if done.cancelled():
                task.future.cancel()
            elif error is not None:
                task.future.set_exception(self._plain(error))
            else:
                task.future.set_result(done.result())

    def _plain(self, error: BaseException) -> BaseException:
        """The task's own exception, unwrapped from Ray's, so callers see what the pool shows."""
        ray = self._ray
        if isinstance(error, ray.exceptions.RayTaskError):
            cause = getattr(error, "cause", None)
            return cause if isinstance(cause, BaseException) else error
        if isinstance(error, self._lost):
            return RunError(
                f"a Ray worker died {self._retries + 1} times running one task "
                f"({type(error).__name__}); rerun the job, or check the cluster's nodes"
            )
        return error

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """Cancel what is still running if asked; stop the Ray this executor started."""
        with self._lock:
            if self._closed:
                return
            live = [] if not cancel_futures else list(self._live.values())
            if cancel_futures:
                self._closed = True
        for task in live:
            task.future.cancel()
            with contextlib.suppress(Exception):  # already finished or its node is gone
                self._ray.cancel(task.ref, force=True)
        if wait and not cancel_futures:
            for task in list(self._live.values()):
                with contextlib.suppress(Exception):
                    task.future.exception()
        with self._lock:
            self._closed = True
            self._live.clear()
        if self._owns and self._ray.is_initialized():
            self._ray.shutdown()


NodeProbe = Callable[[], str | None]
"""Run on one node: ``None`` when the node has what the job needs, else what it lacks."""


def _node_probe(probe: NodeProbe) -> tuple[str, str | None]:
    """One pinned task: this node's name (host, address, node id) and what ``probe`` says."""
    import socket

    ray = import_module("ray")
    node = ray.get_runtime_context().get_node_id()
    where = f"{socket.gethostname()} {ray.util.get_node_ip_address()} (node {node[:12]})"
    return where, probe()


def probe_nodes(probe: NodeProbe, what: str) -> list[tuple[str, str | None]]:
    """Run ``probe`` once on every alive node of the connected cluster; each node's answer.

    Each node runs one task pinned to it (not a soft preference) and needing no
    CPU, so a busy cluster still answers. Nodes are named by host, address and
    node id (several nodes may share a host).
    """
    ray = require_ray()
    if not ray.is_initialized():
        raise RunError("no Ray cluster is connected; open a Ray executor first")
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    remote = ray.remote(num_cpus=0, max_retries=0)(_node_probe)
    refs = [
        remote.options(
            scheduling_strategy=NodeAffinitySchedulingStrategy(node["NodeID"], soft=False)
        ).remote(probe)
        for node in ray.nodes()
        if node.get("Alive")
    ]
    try:
        answers: list[tuple[str, str | None]] = ray.get(refs, timeout=NODE_CHECK_TIMEOUT_S)
    except ray.exceptions.GetTimeoutError as exc:
        _cancel(ray, refs)
        raise RunError(
            f"the per-node check for {what} did not finish within {NODE_CHECK_TIMEOUT_S:.0f} s"
        ) from exc
    except ray.exceptions.RayError as exc:  # the check raised on its node, or the node died
        _cancel(ray, refs)
        cause = getattr(exc, "cause", None)
        error = cause if isinstance(cause, BaseException) else exc
        raise RunError(
            f"the per-node check for {what} failed on a node "
            f"({type(error).__name__}: {str(error)[:500]})"
        ) from exc
    return sorted(answers)


def _cancel(ray: ModuleType, refs: list[Any]) -> None:
    """Cancel the per-node checks still running (a finished or lost one is left alone)."""
    for ref in refs:
        with contextlib.suppress(Exception):
            ray.cancel(ref, force=True)


def require_on_every_node(probe: NodeProbe, what: str) -> int:
    """Refuse, naming every node that lacks ``what`` and why; else how many nodes have it."""
    answers = probe_nodes(probe, what)
    missing = [(where, problem) for where, problem in answers if problem is not None]
    if missing:
        named = "; ".join(f"{where}: {problem}" for where, problem in missing)
        raise NotSupportedError(
            f"{len(missing)} of {len(answers)} Ray nodes lack {what}: {named}; "
            "install it there (see docs/scale.md) or leave those nodes out"
        )
    return len(answers)


@dataclass(frozen=True)
class _Yes:
    check: Callable[[], bool]
    what: str

    def __call__(self) -> str | None:
        return None if self.check() else f"no {self.what}"


def check_nodes(check: Callable[[], bool], what: str) -> None:
    """Run ``check`` once on every alive node of the connected cluster; refuse if any fails.

    Each node runs one task pinned to it (not a soft preference), so a node
    that lacks what the job needs is named before any work is handed out.
    """
    require_on_every_node(_Yes(check, what), what)
