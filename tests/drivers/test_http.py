"""The OpenAI-compatible HTTP driver against a real chat-completions server on loopback."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Coroutine, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, TypeVar

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pngs import tiny_png

from playproof.core.agent import NOOP, Action, DecisionContext, HistoryEntry
from playproof.core.observation import Image, Observation
from playproof.drivers._answer import first_word
from playproof.drivers._cost import Pricing, TokenUsage
from playproof.drivers.openai import OpenAIDriver
from playproof.errors import CostError, DriverError, RunCancelled

VOCABULARY = ("up", "down", "left", "right")
T = TypeVar("T")


@dataclass
class Reply:
    """What the loopback server answers to one POST."""

    status: int = 200
    body: Any = None  # dict -> JSON; bytes -> raw
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0
    length: bool = True  # send Content-Length (else the body ends when the connection closes)


def chat(content: Any, usage: dict[str, Any] | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}}],
    }
    if usage is not None:
        body["usage"] = usage
    return body


class ChatServer(ThreadingHTTPServer):
    """A chat-completions endpoint that plays back a list of replies (the last one repeats)."""

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.plan: list[Reply] = [Reply(body=chat("up"))]
        self.requests: list[dict[str, Any]] = []
        self.headers_seen: list[dict[str, str]] = []
        self.stop = threading.Event()
        self.lock = threading.Lock()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"

    def next_reply(self) -> Reply:
        with self.lock:
            return self.plan.pop(0) if len(self.plan) > 1 else self.plan[0]

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client that hangs up mid-body (the byte-cap test) is expected


class _Handler(BaseHTTPRequestHandler):
    server: ChatServer

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        size = int(self.headers.get("content-length", "0"))
        payload = json.loads(self.rfile.read(size))
        with self.server.lock:
            self.server.requests.append(payload)
            self.server.headers_seen.append({k.lower(): v for k, v in self.headers.items()})
        if self.path != "/v1/chat/completions":
            self.send_error(404)
            return
        reply = self.server.next_reply()
        if reply.delay_s:
            self.server.stop.wait(reply.delay_s)
        body = reply.body if isinstance(reply.body, bytes) else json.dumps(reply.body).encode()
        self.send_response(reply.status)
        self.send_header("content-type", "application/json")
        for name, value in reply.headers.items():
            self.send_header(name, value)
        if reply.length:
            self.send_header("content-length", str(len(body)))
        self.send_header("connection", "close")
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def server() -> Iterator[ChatServer]:
    chat_server = ChatServer()
    thread = threading.Thread(target=chat_server.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    yield chat_server
    chat_server.stop.set()
    chat_server.shutdown()
    chat_server.server_close()
    thread.join(timeout=5)


def run(work: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(work)


IMAGE = Image.from_bytes(tiny_png(), media_type="image/png", width=1, height=1)


def context(cancel: asyncio.Event | None = None) -> DecisionContext:
    return DecisionContext(
        turn=12,
        max_turns=300,
        seed=3,
        spent_usd=0.5,
        remaining_usd=1.5,
        vocabulary=VOCABULARY,
        guidance="merge towards the left",
        cancel=cancel or asyncio.Event(),
    )


HISTORY = [HistoryEntry(turn=t, observation=f"board at {t}", input="left") for t in range(1, 12)]


def decide(
    agent: OpenAIDriver,
    observation: Observation | None = None,
    cancel: asyncio.Event | None = None,
) -> Action:
    async def once() -> Action:
        try:
            return await agent.act(
                observation or Observation(text="2 . . 2"), HISTORY, context(cancel)
            )
        finally:
            await agent.aclose()

    return run(once())


def make(server: ChatServer, **options: Any) -> OpenAIDriver:
    options.setdefault("backoff_s", 0.01)
    options.setdefault("timeout_s", 5.0)
    return OpenAIDriver("test-model", base_url=server.base_url, **options)


def test_a_normal_reply_and_the_prompt_layout(server: ChatServer) -> None:
    server.plan = [Reply(body=chat("left\nbecause the corner"))]
    agent = make(server, history_limit=2, max_tokens=8, temperature=0.0, extra_body={"seed": 1})
    assert decide(agent) == Action("left", None)
    sent = server.requests[0]
    assert sent["model"] == "test-model"
    assert (sent["max_tokens"], sent["temperature"], sent["seed"]) == (8, 0.0, 1)
    assert "stream" not in sent
    system, user = sent["messages"]
    assert system["role"] == "system"
    assert "up, down, left, right" in system["content"]
    text = user["content"]
    assert isinstance(text, str)
    for fragment in (
        "Turn 12 of 300",
        "budget left: $1.500000",
        "merge towards the left",
        "board at 10",
        "board at 11",
        "2 . . 2",
        "Reply with exactly one of: up, down, left, right",
    ):
        assert fragment in text
    assert "board at 9" not in text  # history limited to two turns
    assert text.index("board at 11") < text.index("Current observation")
    assert agent.kind == "openai"
    assert agent.id == f"test-model@{server.base_url}"


def test_content_as_a_parts_list(server: ChatServer) -> None:
    parts = [{"type": "text", "text": "Right"}, {"type": "text", "text": " is best"}]
    server.plan = [Reply(body=chat(parts))]
    assert decide(make(server)).input == "right"


def test_off_vocabulary_answer_is_noop(server: ChatServer) -> None:
    server.plan = [Reply(body=chat("jump over the tiles"))]
    assert decide(make(server)).input == NOOP


def test_a_user_parser_picks_the_answer(server: ChatServer) -> None:
    server.plan = [Reply(body=chat("thinking... ANSWER: down"))]
    agent = make(server, parser=lambda text: text.rsplit("ANSWER:", 1)[-1])
    assert decide(agent).input == "down"


def test_cached_token_pricing_costs_exactly_0_0018(server: ChatServer) -> None:
    usage = {
        "prompt_tokens": 1000,
        "completion_tokens": 500,
        "total_tokens": 1500,
        "prompt_tokens_details": {"cached_tokens": 400},
    }
    server.plan = [Reply(body=chat("up", usage))]
    pricing = Pricing(input_usd_per_mtok=1, cached_input_usd_per_mtok=0.5, output_usd_per_mtok=2)
    agent = make(server, pricing=pricing)
    assert decide(agent) == Action("up", 0.0018)
    report = agent.provenance()
    assert (report["cost_from_pricing"], report["cached_tokens"], report["prompt_tokens"]) == (
        1,
        400,
        1000,
    )


def test_cached_tokens_default_to_the_input_price(server: ChatServer) -> None:
    usage = {
        "prompt_tokens": 1000,
        "completion_tokens": 0,
        "prompt_tokens_details": {"cached_tokens": 400},
    }
    server.plan = [Reply(body=chat("up", usage))]
    agent = make(server, pricing=Pricing(input_usd_per_mtok=2, output_usd_per_mtok=8))
    assert decide(agent).cost_usd == 0.002


@pytest.mark.parametrize(
    ("usage", "headers", "cost"),
    [
        ({"prompt_tokens": 10, "completion_tokens": 1, "cost": 0.0123}, {}, 0.0123),
        (
            {
                "prompt_tokens": 10,
                "completion_tokens": 1,
                "cost": 0.001,
                "is_byok": True,
                "cost_details": {"upstream_inference_cost": 0.02},
            },
            {},
            0.021,
        ),
        (
            {
                "prompt_tokens": 5,
                "completion_tokens": 54,
                "cost": {"request_cost": 0.005, "total_cost": 0.00506},
            },
            {},
            0.00506,
        ),
        ({"prompt_tokens": 10, "completion_tokens": 1, "total_cost": 0.07}, {}, 0.07),
        (
            {"prompt_tokens": 10, "completion_tokens": 1},
            {"x-litellm-response-cost": "0.0042"},
            0.0042,
        ),
    ],
    ids=["openrouter", "openrouter-byok", "perplexity", "total-cost", "litellm-header"],
)
def test_provider_reported_cost_comes_first(
    server: ChatServer, usage: dict[str, Any], headers: dict[str, str], cost: float
) -> None:
    server.plan = [Reply(body=chat("down", usage), headers=headers)]
    pricing = Pricing(input_usd_per_mtok=100, output_usd_per_mtok=100)
    agent = make(server, pricing=pricing)
    action = decide(agent)
    assert action.input == "down"
    assert action.cost_usd == pytest.approx(cost, rel=1e-12)
    assert agent.provenance()["cost_from_provider"] == 1


def test_usage_without_pricing_is_unmeasured_not_zero(server: ChatServer) -> None:
    server.plan = [Reply(body=chat("up", {"prompt_tokens": 10, "completion_tokens": 2}))]
    agent = make(server)
    assert decide(agent).cost_usd is None
    assert agent.provenance()["cost_unmeasured"] == 1


def test_a_negative_provider_cost_is_a_cost_error(server: ChatServer) -> None:
    server.plan = [Reply(body=chat("up", {"prompt_tokens": 1, "completion_tokens": 1, "cost": -1}))]
    with pytest.raises(CostError):
        decide(make(server))


def test_429_then_success_is_retried_and_counted(server: ChatServer) -> None:
    server.plan = [
        Reply(status=429, body={"error": {"message": "slow down"}}, headers={"retry-after": "0"}),
        Reply(body=chat("up", {"prompt_tokens": 1, "completion_tokens": 1, "cost": 0.002})),
    ]
    agent = make(server)
    assert decide(agent) == Action("up", 0.002)
    report = agent.provenance()
    assert (report["requests"], report["retries"], report["replies"]) == (2, 1, 1)
    assert report["retry_cost_usd"] == 0.0


def test_a_failed_attempt_that_reports_a_cost_is_charged(server: ChatServer) -> None:
    server.plan = [
        Reply(status=502, body={"usage": {"cost": 0.001}}),
        Reply(body=chat("up", {"prompt_tokens": 1, "completion_tokens": 1, "cost": 0.002})),
    ]
    agent = make(server)
    assert decide(agent).cost_usd == pytest.approx(0.003, rel=1e-12)
    assert agent.provenance()["retry_cost_usd"] == 0.001


def test_retry_after_is_capped_by_the_backoff_cap(server: ChatServer) -> None:
    server.plan = [
        Reply(status=503, headers={"retry-after": "3600"}, body=b""),
        Reply(body=chat("up")),
    ]
    agent = make(server, max_backoff_s=0.05, deadline_s=10)
    assert decide(agent).input == "up"


def test_500_forever_is_a_driver_error_after_the_retry_budget(server: ChatServer) -> None:
    server.plan = [Reply(status=500, body={"error": "boom"})]
    agent = make(server, max_retries=2)
    with pytest.raises(DriverError, match="HTTP 500 on all 3 attempts"):
        decide(agent)
    assert len(server.requests) == 3
    assert agent.provenance()["retries"] == 2


def test_a_retry_that_would_pass_the_deadline_is_not_attempted(server: ChatServer) -> None:
    server.plan = [Reply(status=429, headers={"retry-after": "5"}, body=b"")]
    agent = make(server, max_backoff_s=5, deadline_s=1)
    with pytest.raises(DriverError, match="deadline"):
        decide(agent)
    assert len(server.requests) == 1


def test_other_http_errors_are_not_retried(server: ChatServer) -> None:
    server.plan = [Reply(status=400, body={"error": {"message": "bad model name"}})]
    with pytest.raises(DriverError, match=r"HTTP 400.*bad model name"):
        decide(make(server))
    assert len(server.requests) == 1


@pytest.mark.parametrize("length", [True, False], ids=["content-length", "until-close"])
def test_a_body_over_the_cap_is_refused(server: ChatServer, length: bool) -> None:
    server.plan = [Reply(body=chat("up " + "x" * 300_000), length=length)]
    with pytest.raises(DriverError, match="100000-byte cap"):
        decide(make(server, max_body_bytes=100_000))


def test_a_slow_reply_past_the_timeout_is_a_driver_error(server: ChatServer) -> None:
    server.plan = [Reply(body=chat("up"), delay_s=10)]
    with pytest.raises(DriverError, match="no complete reply within"):
        decide(make(server, timeout_s=0.3))


def test_a_slow_reply_past_the_decision_deadline_is_a_driver_error(server: ChatServer) -> None:
    server.plan = [Reply(body=chat("up"), delay_s=10)]
    with pytest.raises(DriverError, match="no complete reply within"):
        decide(make(server, timeout_s=5, deadline_s=0.3))


@pytest.mark.parametrize("raw", [b"<html>gateway</html>", b"[1, 2]", b'{"choices": []}'])
def test_non_json_or_malformed_replies_are_driver_errors(server: ChatServer, raw: bytes) -> None:
    server.plan = [Reply(body=raw)]
    with pytest.raises(DriverError):
        decide(make(server))


def test_an_unreachable_server_is_a_driver_error() -> None:
    agent = OpenAIDriver("m", base_url="http://127.0.0.1:9/v1", timeout_s=2)
    with pytest.raises(DriverError):
        decide(agent)


def test_vision_on_sends_image_parts(server: ChatServer) -> None:
    decide(make(server, vision=True), Observation(text="look", images=(IMAGE, IMAGE)))
    content = server.requests[0]["messages"][1]["content"]
    assert isinstance(content, list)
    assert content[0]["type"] == "text"
    assert "look" in content[0]["text"]
    urls = [part["image_url"]["url"] for part in content[1:]]
    assert urls == [f"data:image/png;base64,{IMAGE.data}"] * 2


def test_vision_off_or_no_images_sends_text_only(server: ChatServer) -> None:
    decide(make(server), Observation(text="look", images=(IMAGE,)))
    decide(make(server, vision=True), Observation(text="look"))
    for sent in server.requests:
        assert isinstance(sent["messages"][1]["content"], str)
        assert "base64" not in json.dumps(sent)


def test_the_api_key_comes_from_the_named_variable_and_stays_secret(
    server: ChatServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PLAYPROOF_TEST_KEY", "sk-secret-123")
    agent = make(server, api_key_env="PLAYPROOF_TEST_KEY")
    decide(agent)
    assert server.headers_seen[0]["authorization"] == "Bearer sk-secret-123"
    public = agent.id + repr(agent) + json.dumps(agent.provenance())
    assert "sk-secret-123" not in public


def test_a_missing_key_variable_is_refused_at_construction(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PLAYPROOF_TEST_KEY", raising=False)
    with pytest.raises(DriverError, match="PLAYPROOF_TEST_KEY"):
        OpenAIDriver("m", api_key_env="PLAYPROOF_TEST_KEY")


def test_the_id_drops_credentials_and_query_from_the_url() -> None:
    agent = OpenAIDriver("m", base_url="https://user:pw@example.test:8443/v1/?key=abc")
    assert agent.id == "m@https://example.test:8443/v1"


@pytest.mark.parametrize(
    "options",
    [
        {"base_url": "ftp://example.test"},
        {"base_url": "http://example.test:99999/v1"},
        {"base_url": "http://example.test:port/v1"},
        {"base_url": "http://[::1/v1"},
        {"extra_body": {"messages": []}},
        {"extra_body": {"x": float("nan")}},
        {"timeout_s": 0},
        {"max_retries": -1},
    ],
)
def test_bad_options_are_refused(options: dict[str, Any]) -> None:
    with pytest.raises(DriverError):
        OpenAIDriver("m", **options)


def test_cancellation_stops_waiting(server: ChatServer) -> None:
    server.plan = [Reply(body=chat("up"), delay_s=10)]

    async def scenario() -> Action:
        cancel = asyncio.Event()
        asyncio.get_running_loop().call_later(0.2, cancel.set)
        agent = make(server, timeout_s=30)
        try:
            return await agent.act(Observation(text="x"), [], context(cancel))
        finally:
            await agent.aclose()

    with pytest.raises(RunCancelled):
        run(scenario())


@given(st.text(max_size=40))
def test_first_word_is_always_a_declared_input_or_noop(text: str) -> None:
    assert first_word(text, VOCABULARY) in (*VOCABULARY, NOOP)


@given(
    st.integers(0, 10**7),
    st.integers(0, 10**7),
    st.integers(0, 10**7),
)
def test_token_cost_is_non_negative_and_cached_tokens_never_cost_more(
    prompt: int, cached_share: int, completion: int
) -> None:
    cached = cached_share % (prompt + 1)
    prices = Pricing(input_usd_per_mtok=3, cached_input_usd_per_mtok=0.3, output_usd_per_mtok=15)
    with_cache = prices.cost(TokenUsage(prompt=prompt, cached=cached, completion=completion))
    without = prices.cost(TokenUsage(prompt=prompt, cached=0, completion=completion))
    assert 0 <= with_cache <= without


@pytest.mark.parametrize(
    "value",
    [
        "Fri, 31 Dec 99999999999999999999 23:59:59 GMT",
        "Mon, 01 Jan 2020 00:00:00 +99999999999999999999",
    ],
    ids=["year", "zone"],
)
def test_a_retry_after_date_past_any_clock_is_ignored(server: ChatServer, value: str) -> None:
    server.plan = [
        Reply(status=503, headers={"retry-after": value}, body=b""),
        Reply(body=chat("up")),
    ]
    agent = make(server)
    assert decide(agent).input == "up"
    assert agent.provenance()["retries"] == 1


@pytest.mark.parametrize(
    "details",
    [None, {}, {"upstream_inference_cost": None}],
    ids=["no-details", "empty-details", "null-upstream"],
)
def test_a_byok_cost_without_the_upstream_part_is_not_taken_as_the_cost(
    server: ChatServer, details: dict[str, Any] | None
) -> None:
    usage: dict[str, Any] = {
        "prompt_tokens": 1000,
        "completion_tokens": 500,
        "cost": 0.0,
        "is_byok": True,
    }
    if details is not None:
        usage["cost_details"] = details
    server.plan = [Reply(body=chat("up", usage))]
    agent = make(server)
    assert decide(agent).cost_usd is None  # the upstream bill is unknown: unmeasured, not 0
    assert agent.provenance()["cost_unmeasured"] == 1
    priced = make(server, pricing=Pricing(input_usd_per_mtok=1, output_usd_per_mtok=2))
    assert decide(priced).cost_usd == 0.002  # the declared prices apply instead
    assert priced.provenance()["cost_from_pricing"] == 1


def test_cookies_a_server_sets_are_never_kept_or_sent_back(server: ChatServer) -> None:
    # A server may set new cookies on every reply: a client that kept them would grow its
    # jar, and the Cookie header it sends back, without bound over an episode.
    server.plan = [
        Reply(body=chat("up"), headers={"set-cookie": f"c{n}={'v' * 100}; Path=/"})
        for n in range(3)
    ]
    agent = make(server)

    async def three() -> None:
        try:
            for _ in range(3):
                await agent.act(Observation(text="x"), [], context())
        finally:
            await agent.aclose()

    run(three())
    assert [seen.get("cookie") for seen in server.headers_seen] == [None, None, None]


@pytest.mark.parametrize("key", ["sk-secret-123\r", "sk-secret-123\n", "sk-secrét"])
def test_a_key_no_header_can_carry_is_refused_without_quoting_it(
    server: ChatServer, monkeypatch: pytest.MonkeyPatch, key: str
) -> None:
    # A key file saved with Windows line endings leaves a carriage return in the variable;
    # the HTTP library's complaint about the header would quote the whole key.
    monkeypatch.setenv("PLAYPROOF_TEST_KEY", key)
    with pytest.raises(DriverError) as refused:
        decide(make(server, api_key_env="PLAYPROOF_TEST_KEY"))
    assert "PLAYPROOF_TEST_KEY" in str(refused.value)
    assert "secr" not in str(refused.value)
    assert server.requests == []
