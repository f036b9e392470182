"""Hostile servers behind the OpenAI-compatible driver.

A real TCP server on loopback answers each POST with raw bytes written by one
named behaviour: bodies far over the size bound (declared, undeclared,
chunked, endless), a slow drip, malformed or wrongly shaped JSON, JSON nested
past any parser's stack, a huge answer, invalid UTF-8, absurd cost fields, a
redirect loop, a connection closed mid-body, endless headers, a long garbage
status line. Each decision ends in a typed error (or the documented ``noop`` /
unmeasured outcome) within the driver's bounds, lowered here so the suite
stays quick; a whole episode against a hostile server raises and leaves no
record behind.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import socketserver
import threading
import tracemalloc
import zlib
from collections.abc import Callable, Iterator
from typing import Any

import pytest

import playproof
from playproof.core.agent import NOOP, DecisionContext
from playproof.core.observation import Observation
from playproof.drivers.openai import OpenAIDriver
from playproof.errors import CostError, DriverError, RunError

VOCABULARY = ("up", "down", "left", "right")
BODY_CAP = 64 * 1024
"""The driver's body cap in these tests (the default is 2 MiB)."""
TIMEOUT_S = 1.0
"""One attempt's bound in these tests (the default is 60 s)."""
DEADLINE_S = 3.0
"""One decision's bound in these tests (the default is 300 s)."""
DRIP_PAUSE_S = 0.05
"""Pause between the bytes of a slow drip."""
SERVE_S = 20.0
"""Longest a behaviour keeps writing after the client left (a safety net for the server thread)."""

Behaviour = Callable[[socket.socket, threading.Event], None]


def _head(status: str = "200 OK", *headers: str) -> bytes:
    lines = [f"HTTP/1.1 {status}", "content-type: application/json", *headers, "", ""]
    return "\r\n".join(lines).encode("ascii")


def _complete(body: bytes, status: str = "200 OK") -> Behaviour:
    def send(sock: socket.socket, stop: threading.Event) -> None:
        sock.sendall(_head(status, f"content-length: {len(body)}", "connection: close") + body)

    return send


def _chat(content: Any, usage: Any = None) -> bytes:
    body: dict[str, Any] = {"choices": [{"message": {"role": "assistant", "content": content}}]}
    if usage is not None:
        body["usage"] = usage
    return json.dumps(body).encode()


def _stream(head: bytes, piece: bytes, pause: float = 0.0) -> Behaviour:
    """Send ``head`` then ``piece`` again and again until the client hangs up."""

    def send(sock: socket.socket, stop: threading.Event) -> None:
        sock.sendall(head)
        while not stop.wait(pause):
            sock.sendall(piece)

    return send


def _closed_mid_body(sock: socket.socket, stop: threading.Event) -> None:
    sock.sendall(_head("200 OK", "content-length: 1000") + b'{"choices": [')


def _redirect_to_itself(sock: socket.socket, stop: threading.Event) -> None:
    location = "location: /v1/chat/completions"
    sock.sendall(_head("307 Temporary Redirect", location, "content-length: 0"))


def _not_http(sock: socket.socket, stop: threading.Event) -> None:
    sock.sendall(b"up\r\n\r\n")


NEST = 30_000
"""Nesting depth of the deep-JSON bodies (well under the body cap, far over any stack)."""
CHUNK = b"4000\r\n" + b"x" * 0x4000 + b"\r\n"

ERRORS: dict[str, tuple[Behaviour, type[Exception], str]] = {
    "declared over the cap": (
        _stream(_head("200 OK", f"content-length: {100 * BODY_CAP}"), b"x" * 4096),
        DriverError,
        "declares",
    ),
    "undeclared over the cap": (
        _stream(_head("200 OK", "connection: close"), b"x" * 4096),
        DriverError,
        "over the",
    ),
    "chunked and endless": (
        _stream(_head("200 OK", "transfer-encoding: chunked"), CHUNK),
        DriverError,
        "over the",
    ),
    "a slow drip": (
        _stream(_head("200 OK", "content-length: 1000"), b" ", DRIP_PAUSE_S),
        DriverError,
        "no complete reply",
    ),
    "a slow chunked drip": (
        _stream(_head("200 OK", "transfer-encoding: chunked"), b"1\r\n \r\n", DRIP_PAUSE_S),
        DriverError,
        "no complete reply",
    ),
    "endless headers": (
        _stream(b"HTTP/1.1 200 OK\r\n", b"x-padding: " + b"y" * 1000 + b"\r\n"),
        DriverError,
        "RemoteProtocolError",
    ),
    "no HTTP at all": (_not_http, DriverError, "RemoteProtocolError"),
    "closed mid-body": (_closed_mid_body, DriverError, "RemoteProtocolError"),
    "a redirect loop": (_redirect_to_itself, DriverError, "HTTP 307"),
    "malformed JSON": (
        _complete(b'{"choices": [{"message": {"content": "up"'),
        DriverError,
        "JSON",
    ),
    "a JSON list": (_complete(b'["up"]'), DriverError, "not object"),
    "a JSON string": (_complete(b'"up"'), DriverError, "not object"),
    "choices an object": (_complete(b'{"choices": {"0": "up"}}'), DriverError, "choices"),
    "message a string": (_complete(b'{"choices": [{"message": "up"}]}'), DriverError, "message"),
    "content a number": (_complete(_chat(7)), DriverError, "content"),
    "deeply nested lists": (_complete(b"[" * NEST + b"]" * NEST), DriverError, "nested"),
    "deeply nested content": (
        _complete(b'{"choices": [{"message": {"content": ' + b"[" * NEST + b"]" * NEST + b"}}]}"),
        DriverError,
        "nested",
    ),
    "invalid UTF-8": (
        _complete(b'{"choices": [{"message": {"content": "up \xff\xfe"}}]}'),
        DriverError,
        "JSON",
    ),
    "a negative cost": (_complete(_chat("up", {"cost": -0.01})), CostError, "must be >= 0"),
    "a NaN cost": (
        _complete(b'{"choices": [{"message": {"content": "up"}}], "usage": {"cost": NaN}}'),
        CostError,
        "must be >= 0",
    ),
    "an infinite cost": (_complete(_chat("up", {"cost": "1e999"})), CostError, "must be >= 0"),
    "a cost past any float": (
        _complete(b'{"choices": [{"message": {"content": "up"}}], "usage": {"cost": 1e400}}'),
        CostError,
        "must be >= 0",
    ),
    "an integer cost past any float": (
        _complete(
            b'{"choices": [{"message": {"content": "up"}}], "usage": {"cost": 1%s}}' % (b"0" * 400)
        ),
        CostError,
        "must be >= 0",
    ),
    "a cost in words": (_complete(_chat("up", {"cost": "two cents"})), CostError, "not a number"),
    "a cost as a list": (_complete(_chat("up", {"total_cost": [0.01]})), CostError, "not a number"),
    "a NaN cost header": (
        _complete(_chat("up")),
        CostError,
        "must be >= 0",
    ),
    "token counts past any float": (
        _complete(_chat("up", {"prompt_tokens": 10**4000, "completion_tokens": 1})),
        DriverError,
        "over 9007199254740992 tokens",
    ),
}
"""Each hostile reply, the typed error it must end in, and words the message must hold."""


class HostileServer(socketserver.ThreadingTCPServer):
    """Reads one HTTP request per connection and answers with ``behaviour``."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.behaviour: Behaviour = _complete(_chat("up"))
        self.stop = threading.Event()
        self.connections = 0

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"


class _Handler(socketserver.BaseRequestHandler):
    server: HostileServer

    def handle(self) -> None:
        sock: socket.socket = self.request
        sock.settimeout(SERVE_S)
        self.server.connections += 1
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = sock.recv(65536)
            if not chunk:
                return
            data += chunk
        head, _, body = data.partition(b"\r\n\r\n")
        length = next(
            (
                int(line.split(b":", 1)[1])
                for line in head.split(b"\r\n")
                if line.lower().startswith(b"content-length:")
            ),
            0,
        )
        while len(body) < length:
            chunk = sock.recv(65536)
            if not chunk:
                return
            body += chunk
        # An OSError is the driver hanging up: what a bounded client does.
        with contextlib.suppress(OSError):
            self.server.behaviour(sock, self.server.stop)


@pytest.fixture
def server() -> Iterator[HostileServer]:
    hostile = HostileServer()
    thread = threading.Thread(target=hostile.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    yield hostile
    hostile.stop.set()
    hostile.shutdown()
    hostile.server_close()
    thread.join(timeout=5)


def _driver(server: HostileServer, **options: Any) -> OpenAIDriver:
    bounds: dict[str, Any] = {
        "timeout_s": TIMEOUT_S,
        "deadline_s": DEADLINE_S,
        "max_body_bytes": BODY_CAP,
        "max_retries": 0,
    }
    return OpenAIDriver("hostile", base_url=server.base_url, **{**bounds, **options})


def _decide(driver: OpenAIDriver) -> Any:
    async def once() -> Any:
        context = DecisionContext(
            turn=1,
            max_turns=10,
            seed=0,
            spent_usd=0.0,
            remaining_usd=None,
            vocabulary=VOCABULARY,
            guidance=None,
            cancel=asyncio.Event(),
        )
        try:
            return await driver.act(Observation(text="board"), (), context)
        finally:
            await driver.aclose()

    return asyncio.run(once())


@pytest.mark.timeout(30)
@pytest.mark.parametrize("name", sorted(ERRORS))
def test_each_hostile_reply_is_a_typed_error(server: HostileServer, name: str) -> None:
    behaviour, error, words = ERRORS[name]
    server.behaviour = behaviour
    options: dict[str, Any] = {}
    if name == "a NaN cost header":
        server.behaviour = _with_header(_chat("up"), "x-litellm-response-cost: nan")
    if name == "token counts past any float":
        options["pricing"] = playproof.drivers.Pricing(
            input_usd_per_mtok=1.0, output_usd_per_mtok=1.0
        )
    with pytest.raises(error, match=words):
        _decide(_driver(server, **options))


def _with_header(body: bytes, header: str) -> Behaviour:
    def send(sock: socket.socket, stop: threading.Event) -> None:
        sock.sendall(
            _head("200 OK", header, f"content-length: {len(body)}", "connection: close") + body
        )

    return send


def _compressed(data: bytes, wbits: int) -> bytes:
    packer = zlib.compressobj(9, zlib.DEFLATED, wbits)
    return packer.compress(data) + packer.flush()


@pytest.mark.timeout(30)
def test_a_compression_bomb_is_refused_before_it_is_inflated(server: HostileServer) -> None:
    # 64 MiB of spaces gzipped twice is under 1 KiB on the wire; inflating a layer
    # whole (as an HTTP library decoding a chunk does) would hold all of it in memory.
    inner = zlib.compressobj(9, zlib.DEFLATED, 31)
    block = b" " * (1 << 20)
    layer = b"".join(inner.compress(block) for _ in range(64)) + inner.flush()
    bomb = _compressed(layer, 31)
    assert len(bomb) < 4096
    server.behaviour = _with_header(bomb, "content-encoding: gzip, gzip")
    peak = tracemalloc_peak(lambda: _decide(_driver(server)))
    assert peak[0] < 16 << 20
    assert isinstance(peak[1], DriverError)
    assert "cap once gzip-decoded" in str(peak[1])


def tracemalloc_peak(work: Callable[[], Any]) -> tuple[int, BaseException | None]:
    """Peak bytes Python allocated while ``work`` ran, and what it raised."""
    tracemalloc.start()
    try:
        work()
        raised: BaseException | None = None
    except Exception as exc:
        raised = exc
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    return peak, raised


@pytest.mark.timeout(30)
@pytest.mark.parametrize(
    ("coding", "wbits"), [("gzip", 31), ("deflate", 15), ("deflate", -15), ("identity", 0)]
)
def test_a_compressed_reply_is_decoded(server: HostileServer, coding: str, wbits: int) -> None:
    body = _chat("left", {"cost": 0.5})
    wire = body if coding == "identity" else _compressed(body, wbits)
    server.behaviour = _with_header(wire, f"content-encoding: {coding}")
    action = _decide(_driver(server))
    assert (action.input, action.cost_usd) == ("left", 0.5)


@pytest.mark.timeout(30)
@pytest.mark.parametrize(
    ("coding", "wire", "words"),
    [
        ("br", b"\x0b\x02\x80up\x03", "not supported"),
        ("gzip", b"\x1f\x8b not gzip", "corrupt"),
        ("gzip", _compressed(b"up", 31)[:-4], "truncated"),
        ("gzip, gzip, gzip", b"", "stacks 3"),
    ],
)
def test_an_unusable_coding_is_a_typed_error(
    server: HostileServer, coding: str, wire: bytes, words: str
) -> None:
    server.behaviour = _with_header(wire, f"content-encoding: {coding}")
    with pytest.raises(DriverError, match=words):
        _decide(_driver(server))


@pytest.mark.timeout(30)
def test_token_costs_past_any_float_are_a_cost_error(server: HostileServer) -> None:
    server.behaviour = _complete(_chat("up", {"prompt_tokens": 2**53, "completion_tokens": 1}))
    pricing = playproof.drivers.Pricing(input_usd_per_mtok=1e308, output_usd_per_mtok=0.0)
    with pytest.raises(CostError, match="more than any finite amount"):
        _decide(_driver(server, pricing=pricing))


@pytest.mark.timeout(30)
def test_a_deeply_nested_error_body_is_still_a_typed_error(server: HostileServer) -> None:
    server.behaviour = _complete(b"[" * NEST + b"]" * NEST, status="503 Service Unavailable")
    with pytest.raises(DriverError, match="HTTP 503"):
        _decide(_driver(server))


@pytest.mark.timeout(30)
def test_a_redirect_is_never_followed(server: HostileServer) -> None:
    server.behaviour = _redirect_to_itself
    with pytest.raises(DriverError, match="HTTP 307"):
        _decide(_driver(server, max_retries=3))
    assert server.connections == 1


@pytest.mark.timeout(30)
def test_a_huge_answer_under_the_cap_is_noop(server: HostileServer) -> None:
    server.behaviour = _complete(_chat("up" * (BODY_CAP // 4)))
    assert _decide(_driver(server)).input == NOOP


@pytest.mark.timeout(30)
def test_a_huge_answer_starting_with_a_word_plays_that_word(server: HostileServer) -> None:
    server.behaviour = _complete(_chat("left " + "x" * (BODY_CAP // 2)))
    assert _decide(_driver(server)).input == "left"


@pytest.mark.timeout(30)
def test_a_string_cost_that_is_a_number_counts(server: HostileServer) -> None:
    server.behaviour = _complete(_chat("down", {"cost": "0.25"}))
    action = _decide(_driver(server))
    assert (action.input, action.cost_usd) == ("down", 0.25)


@pytest.mark.timeout(30)
def test_odd_token_counts_leave_the_cost_unmeasured(server: HostileServer) -> None:
    usage = {"prompt_tokens": -5, "completion_tokens": "3"}
    server.behaviour = _complete(_chat("up", usage))
    pricing = playproof.drivers.Pricing(input_usd_per_mtok=1.0, output_usd_per_mtok=1.0)
    action = _decide(_driver(server, pricing=pricing))
    assert (action.input, action.cost_usd) == ("up", None)


@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    "name", ["chunked and endless", "a slow drip", "deeply nested content", "a NaN cost"]
)
def test_an_episode_against_a_hostile_server_records_nothing(
    server: HostileServer, name: str
) -> None:
    server.behaviour = ERRORS[name][0]
    with pytest.raises(RunError):
        playproof.run("native/2048", _driver(server), max_turns=3)


@pytest.mark.timeout(60)
def test_huge_costs_that_add_past_any_float_end_the_run_typed(server: HostileServer) -> None:
    server.behaviour = _complete(_chat("up", {"cost": 1e308}))
    with pytest.raises(CostError, match="add up past"):
        playproof.run("native/2048", _driver(server), max_turns=3)


@pytest.mark.timeout(60)
def test_an_episode_of_noop_answers_records_noop_and_verifies(server: HostileServer) -> None:
    server.behaviour = _complete(_chat("\x00 up"))
    record = playproof.run("native/2048", _driver(server), max_turns=3)
    assert record.inputs == (NOOP,) * 3 or list(record.inputs) == [NOOP] * 3
    assert playproof.verify_record(record).clean


def _long_garbage_status_line(sock: socket.socket, stop: threading.Event) -> None:
    sock.sendall(b"X" * 60_000 + b"\r\n\r\n")


@pytest.mark.timeout(30)
def test_a_protocol_error_quotes_little_of_what_the_server_sent(server: HostileServer) -> None:
    # The HTTP library's message quotes the whole bad line; the error keeps a snippet of it.
    server.behaviour = _long_garbage_status_line
    with pytest.raises(DriverError, match="RemoteProtocolError: illegal status line") as failed:
        _decide(_driver(server))
    assert len(str(failed.value)) < 1000


@pytest.mark.timeout(30)
@pytest.mark.parametrize(
    ("usage", "error"),
    [
        ({"cost": "x" * 500_000}, CostError),
        ({"total_cost": [0.01] * 100_000}, CostError),
        (
            {
                "prompt_tokens": 1,
                "completion_tokens": 1,
                "prompt_tokens_details": {"cached_tokens": int("9" * 4000)},
            },
            DriverError,
        ),
    ],
    ids=["long string", "long list", "long number"],
)
def test_a_cost_error_quotes_little_of_the_reported_value(
    server: HostileServer, usage: dict[str, Any], error: type[Exception]
) -> None:
    server.behaviour = _complete(_chat("up", usage))
    with pytest.raises(error) as failed:
        _decide(_driver(server, max_body_bytes=2 << 20))
    assert len(str(failed.value)) < 1000
