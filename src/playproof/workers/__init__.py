"""The child-process worker protocol every emulator adapter uses to run its game.

:class:`WorkerGame` is a Game whose real game runs in a spawned child Python
process (``python -m playproof.workers.child``), built there by a
``"module:callable"`` factory. Messages are length-prefixed JSON frames with a
size cap; every read has a deadline; failures are typed
(:class:`~playproof.errors.WorkerStartError`, ``WorkerCrashed``,
``WorkerTimeout``, ``WorkerProtocolError``). See ``docs/workers.md``.
"""

from playproof.workers._client import (
    DEFAULT_CALL_TIMEOUT,
    DEFAULT_REPLAY_TIMEOUT,
    DEFAULT_START_TIMEOUT,
    WorkerGame,
)
from playproof.workers._process import QUIT_GRACE, STDERR_TAIL_BYTES
from playproof.workers._wire import MAX_MESSAGE_BYTES, PROTOCOL_VERSION

__all__ = [
    "DEFAULT_CALL_TIMEOUT",
    "DEFAULT_REPLAY_TIMEOUT",
    "DEFAULT_START_TIMEOUT",
    "MAX_MESSAGE_BYTES",
    "PROTOCOL_VERSION",
    "QUIT_GRACE",
    "STDERR_TAIL_BYTES",
    "WorkerGame",
]
