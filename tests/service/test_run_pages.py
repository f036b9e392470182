"""The run page shows its decisions a page at a time; its plots and totals cover them all."""

from __future__ import annotations

import re
import uuid
from typing import Any

import pytest

pytest.importorskip("jinja2", reason="the web pages need the server extra")

import playproof
from playproof.core.record import RunRecord
from playproof.service.web import policy
from playproof.service.web.plots import PLOT_HEIGHT, SERIES_BUCKETS, series_plot
from playproof.service.web.views import DECISIONS_PAGE
from playproof.sign import SigningKey

from .conftest import Service

WORDS = ("up", "right", "down", "left")
SPIKE_AT = 777  # 0-based: turn 778
SPIKE_MS = 1_000_000.0


def _columns(count: int) -> dict[str, list[Any]]:
    costs: list[float | None] = [None if i % 100 == 7 else 0.001 for i in range(count)]
    latencies = [float(i % 97) + 1.0 for i in range(count)]
    latencies[SPIKE_AT] = SPIKE_MS
    return {
        "inputs": [WORDS[i % 4] for i in range(count)],
        "costs_usd": costs,
        "latencies_ms": latencies,
    }


def _long_record(base: RunRecord, count: int) -> RunRecord:
    """``base`` with ``count`` decisions (its claim no longer replays, but it is stored)."""
    columns = _columns(count)
    costs = [c for c in columns["costs_usd"] if c is not None]
    data = base.to_json()
    return RunRecord.model_validate(
        {
            **data,
            "started_at": uuid.uuid4().hex,
            "decisions": columns,
            "limits": {**data["limits"], "max_turns": count},
            "accounting": {
                "spent_usd": sum(costs),
                "unmeasured_decisions": count - len(costs),
                "total_latency_ms": sum(columns["latencies_ms"]),
            },
        }
    )


def _turns_shown(page: str) -> list[int]:
    table = page[page.index('<table class="data decisions">') :]
    table = table[: table.index("</table>")]
    return [
        int(t) for t in re.findall(r"<tr><td><a href=\"/runs/[0-9a-f]+/replay\?turn=(\d+)\"", table)
    ]


def _points(svg: str) -> list[tuple[float, float]]:
    return [
        (float(x), float(y))
        for points in re.findall(r'<polyline class="series" points="([^"]*)"', svg)
        for x, y in (pair.split(",") for pair in points.split())
    ]


def test_a_long_run_page_lists_one_page_of_decisions_and_plots_them_all(
    service: Service, signer: SigningKey, record_2048: RunRecord
) -> None:
    count = 2 * DECISIONS_PAGE + 234
    token = service.owner("alice", (signer.verifying_key,))
    answer = service.upload(
        playproof.sign_record(_long_record(record_2048, count), signer).to_bytes(), token
    )
    assert answer.status_code == 202, answer.text
    run_id = answer.json()["id"]
    assert service.verdict(run_id)["status"] != "pending"

    pages = [service.client.get(f"/runs/{run_id}", params={"page": n}) for n in (1, 2, 3)]
    assert [p.status_code for p in pages] == [200, 200, 200]
    assert service.client.get(f"/runs/{run_id}").text.count("replay?turn=") == pages[0].text.count(
        "replay?turn="
    )
    assert [_turns_shown(p.text) for p in pages] == [
        list(range(1, DECISIONS_PAGE + 1)),
        list(range(DECISIONS_PAGE + 1, 2 * DECISIONS_PAGE + 1)),
        list(range(2 * DECISIONS_PAGE + 1, count + 1)),
    ]
    assert f"Decisions 1 to {DECISIONS_PAGE} of {count}" in pages[0].text
    assert f"Decisions {DECISIONS_PAGE + 1} to {2 * DECISIONS_PAGE} of {count}" in pages[1].text
    assert f"Decisions {2 * DECISIONS_PAGE + 1} to {count} of {count}" in pages[2].text
    assert 'rel="prev"' not in pages[0].text
    assert f'href="/runs/{run_id}?page=2#decisions-h"' in pages[0].text
    assert f'href="/runs/{run_id}?page=1#decisions-h"' in pages[1].text
    assert f'href="/runs/{run_id}?page=3#decisions-h"' in pages[1].text
    assert 'rel="next"' not in pages[2].text

    unmeasured = sum(1 for c in _columns(count)["costs_usd"] if c is None)
    for page in pages:  # every page's summaries and plots cover the whole run
        text = page.text
        assert f"Turns</dt><dd>{count} of at most {count}" in text
        assert f"{unmeasured} decisions not priced" in text
        assert f"{count} decisions; highest 1,000,000 ms" in text
        assert f"{unmeasured} not measured" in text
        assert f"turn {count}</text>" in text
        latency = text[text.index('aria-labelledby="latency-t') :]
        latency = latency[: latency.index("</svg>")]
        points = _points(latency)
        assert 0 < len(points) <= 2 * SERIES_BUCKETS
        assert min(y for _, y in points) == 16.0  # the spike is drawn, at the top
        assert max(y for _, y in points) < PLOT_HEIGHT

    for bad, status in (("4", 404), ("0", 422), ("x", 422), ("999999999", 422)):
        answer = service.client.get(f"/runs/{run_id}", params={"page": bad})
        assert answer.status_code == status, (bad, answer.status_code)
    past = service.client.get(f"/runs/{run_id}", params={"page": 4})
    assert "page 4 of a run with 3 pages of decisions" in past.text


def test_a_short_run_page_lists_every_decision_without_a_pager(
    service: Service, signer: SigningKey, record_2048: RunRecord
) -> None:
    token = service.owner("alice", (signer.verifying_key,))
    run_id = service.upload_verified(signer, record_2048, token)
    page = service.client.get(f"/runs/{run_id}").text
    assert _turns_shown(page) == list(range(1, len(record_2048.decisions) + 1))
    assert f"All {len(record_2048.decisions)} decisions" in page
    assert "Pages of decisions" not in page
    assert service.client.get(f"/runs/{run_id}", params={"page": 2}).status_code == 404


def test_a_long_series_is_drawn_as_the_low_and_high_of_each_span() -> None:
    count = 400_000
    values: list[float | None] = [1.0] * count
    values[123_457] = 50.0  # a spike and a dip inside spans of about 625 decisions
    values[300_001] = 0.0
    for i in range(200_000, 201_500):  # whole spans unmeasured: a gap in the line
        values[i] = None
    svg = series_plot(values, title="t", unit="ms", plot_id="p")
    lines = re.findall(r'<polyline class="series" points="([^"]*)"', svg)
    assert len(lines) == 2
    points = _points(svg)
    assert len(points) <= 2 * SERIES_BUCKETS
    ys = sorted({y for _, y in points})
    assert ys[0] == 16.0  # the spike (the highest value) at the top
    assert ys[-1] == PLOT_HEIGHT - 32  # the dip to 0 on the axis
    assert len(svg) < 40_000
    assert f"{count} decisions; highest 50.00 ms" in svg
    assert "1500 not measured" in svg
    assert f"each of {SERIES_BUCKETS} spans" in svg
    short = series_plot([1.0, None, 2.0, 3.0], title="t", unit="ms", plot_id="p")
    assert len(_points(short)) == 3  # a short series is drawn point by point
    assert "spans" not in short


def test_the_action_list_is_bounded_and_its_counts_cover_every_input() -> None:
    events = [
        {"type": "propose", "line": "quote USDC JUP 1"},
        {"type": "execute", "action": "quote"},
        {"type": "propose", "line": "buy moon"},
        {"type": "reject", "reason": "malformed"},
        {"type": "propose", "line": "finish"},
        {"type": "finalize", "reason": "finished"},
    ]
    inputs = ["quote USDC JUP 1", "buy moon", "finish"] + ["wait"] * 100_000
    first, valid, refused = policy._actions(events, inputs, range(policy.ACTIONS_PAGE))
    assert [a.turn for a in first] == list(range(1, policy.ACTIONS_PAGE + 1))
    assert [a.valid for a in first[:4]] == [True, False, True, None]
    assert (valid, refused) == (2, 1)
    last, _, _ = policy._actions(events, inputs, range(100_000, 100_500))
    assert [a.turn for a in last] == [100_001, 100_002, 100_003]
    assert {a.valid for a in last} == {None}
