"""The web pages in a real browser against a real ``playproof serve``."""

from __future__ import annotations

import base64
import hashlib
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from playproof.corpus import load_manifest, shipped_paths
from playproof.service.web.frames import FRAME_IMAGE_SCALE
from playproof.service.web.rendering import STATIC
from playproof.targets import get_target

VENDOR = Path(__file__).parent / "vendor"
PLAY_POLLS = 300


def _sums(folder: Path) -> dict[str, str]:
    lines = (folder / "SHA256SUMS").read_text().splitlines()
    return {name.strip(): digest for digest, name in (line.split(maxsplit=1) for line in lines)}


@pytest.mark.parametrize(
    ("folder", "name"), [(STATIC / "vendor", "htmx.min.js"), (VENDOR, "axe.min.js")]
)
def test_vendored_scripts_match_their_pinned_digests(folder: Path, name: str) -> None:
    digest = hashlib.sha256((folder / name).read_bytes()).hexdigest()
    assert _sums(folder)[name] == digest
    assert digest in (folder / "README.md").read_text()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    """A fresh browser context (no cookies) and a page that records console errors."""
    context = browser.new_context()
    opened = context.new_page()
    opened.console_errors = []
    opened.on(
        "console", lambda m: opened.console_errors.append(m.text) if m.type == "error" else None
    )
    opened.on("pageerror", lambda e: opened.console_errors.append(str(e)))
    try:
        yield opened
    finally:
        context.close()


def _main_pages(server: Any) -> list[tuple[str, str]]:
    pages = [
        ("targets", "/targets"),
        ("leaderboard", "/targets/native/2048/leaderboard"),
        ("run", f"/runs/{server.runs['2048']}"),
        ("replay-text", f"/runs/{server.runs['2048']}/replay?turn=5"),
        ("run-rejected", f"/runs/{server.runs['rejected']}"),
        ("replay-rejected", f"/runs/{server.runs['rejected']}/replay"),
        ("signin", "/signin"),
        ("challenge", f"/challenges/{server.challenge}"),
        ("leaderboard-sorted", "/targets/native/2048/leaderboard?sort=turns"),
        ("grades", "/grades"),
        ("grade", f"/grades/{server.grades['second']}"),
    ]
    if "policy" in server.runs:
        pages.append(("run-policy", f"/runs/{server.runs['policy']}"))
    if "pp-collect" in server.runs:
        pages += [
            ("run-pp-collect", f"/runs/{server.runs['pp-collect']}"),
            ("replay-pp-collect", f"/runs/{server.runs['pp-collect']}/replay?turn=30"),
        ]
    return pages


def test_every_page_renders_without_console_errors(
    server: Any, page: Any, screenshots: Path
) -> None:
    for name, path in _main_pages(server):
        answer = page.goto(server.url + path)
        assert answer.status == 200, path
        page.wait_for_load_state("networkidle")
        assert page.locator("h1").count() == 1, path
        page.screenshot(path=str(screenshots / f"{name}.png"), full_page=True)
    assert page.console_errors == []


def test_the_run_page_shows_the_proof(server: Any, page: Any) -> None:
    record = server.records["2048"]
    page.goto(f"{server.url}/runs/{server.runs['2048']}")
    assert page.locator("#score-h").inner_text() == record.score.text
    assert page.locator("#status").inner_text() == "verified"
    body = page.locator("main").inner_text()
    for check in ("claims-reproduced", "costs-add-up", "signature-valid"):
        assert check in body
    assert "Leaf index" in body
    assert page.locator("svg.plot").count() == 3
    assert page.locator("table.decisions tbody tr").count() == len(record.decisions)
    download = httpx.get(f"{server.url}/runs/{server.runs['2048']}/record.json")
    assert json.loads(download.content)["payloadType"]


def test_leaderboard_order_matches_the_api(server: Any, page: Any) -> None:
    api = httpx.get(f"{server.url}/api/v1/leaderboards/native/2048").json()
    expected = [row["run_id"] for row in api["rows"]]
    assert server.runs["2048"] in expected
    assert server.runs["rejected"] not in expected
    page.goto(f"{server.url}/targets/native/2048/leaderboard")
    shown = page.locator("#board tbody tr").evaluate_all("rows => rows.map(r => r.dataset.run)")
    assert shown == expected


def test_a_challenge_board_matches_the_api(server: Any, page: Any) -> None:
    api = httpx.get(f"{server.url}/api/v1/challenges/{server.challenge}/leaderboard").json()
    expected = [row["run_id"] for row in api["rows"]]
    assert expected == [server.runs["budgeted"]]
    page.goto(f"{server.url}/challenges/{server.challenge}")
    shown = page.locator("#board tbody tr").evaluate_all("rows => rows.map(r => r.dataset.run)")
    assert shown == expected
    page.goto(f"{server.url}/targets/native/2048/leaderboard")
    assert page.locator(f"a[href='/challenges/{server.challenge}']").count() == 1


def _local_frame(server: Any, name: str, turn: int) -> tuple[str, bytes]:
    record = server.records[name]
    target = get_target(record.target.name or "")
    image = target.spec.extra is not None
    game = target.open(image_scale=FRAME_IMAGE_SCALE) if image else target.open()
    try:
        game.reset(record.seed)
        for word in record.inputs[:turn]:
            game.step(word)
        observed = game.observe()
    finally:
        game.close()
    if image:
        return "image", base64.b64decode(observed.images[0].data)
    return "text", observed.text.encode()


@pytest.mark.parametrize(("name", "turn"), [("pp-collect", 30), ("2048", 7)])
def test_the_viewer_frame_is_the_local_replay_frame(
    server: Any, page: Any, name: str, turn: int
) -> None:
    if name not in server.runs:
        pytest.skip("pyboy is not installed: pip install 'playproof[pyboy]'")
    kind, local = _local_frame(server, name, turn)
    page.goto(f"{server.url}/runs/{server.runs[name]}/replay?turn={turn}")
    frame = page.locator("#frame")
    assert frame.get_attribute("data-turn") == str(turn)
    if kind == "image":
        source = frame.get_attribute("src")
        served = page.request.get(server.url + source).body()
        assert frame.evaluate("img => img.naturalWidth") > 0
    else:
        served = frame.inner_text().encode()
    assert hashlib.sha256(served).hexdigest() == hashlib.sha256(local).hexdigest()


def test_the_viewer_steps_and_plays_with_javascript(server: Any, page: Any) -> None:
    page.goto(f"{server.url}/runs/{server.runs['2048']}/replay?turn=3")
    page.locator("#next").click()
    page.locator("#frame[data-turn='4']").wait_for()
    assert page.locator("#turn").input_value() == "4"
    page.locator("#play").click()
    turns = set()
    for _ in range(PLAY_POLLS):  # a bounded wait for the player to move on, not a timing
        turns.add(int(page.locator("#frame").get_attribute("data-turn")))
        if max(turns) >= 6:
            break
        page.wait_for_timeout(100)
    page.locator("#play").click()
    assert max(turns) >= 6
    assert page.locator("#play").inner_text() == "Play"
    assert page.console_errors == []


def test_pages_read_without_javascript(server: Any, browser: Any) -> None:
    context = browser.new_context(java_script_enabled=False)
    try:
        page = context.new_page()
        page.goto(f"{server.url}/runs/{server.runs['2048']}")
        assert page.locator("#score-h").inner_text() == server.records["2048"].score.text
        page.goto(f"{server.url}/runs/{server.runs['2048']}/replay?turn=2")
        assert page.locator("#play").is_hidden()
        page.locator("#next").click()
        page.wait_for_url("**turn=3")
        assert page.locator("#frame").get_attribute("data-turn") == "3"
        page.locator("#turn").fill("9")
        page.locator("#scrub button[type=submit]").click()
        page.wait_for_url("**turn=9")
        assert page.locator("#frame").get_attribute("data-turn") == "9"
    finally:
        context.close()


def test_a_rejected_run_shows_where_replay_diverged(server: Any, page: Any) -> None:
    honest = server.records["2048"].claimed[-1]
    page.goto(f"{server.url}/runs/{server.runs['rejected']}/replay")
    notice = page.locator("#divergence").inner_text()
    assert f"turn {honest.turn}" in notice
    assert honest.id in notice
    page.goto(f"{server.url}/runs/{server.runs['rejected']}")
    assert page.locator("#status").inner_text() == "rejected"


def test_record_values_are_text_never_markup(server: Any, page: Any) -> None:
    page.goto(f"{server.url}/runs/{server.runs['hostile']}")
    assert "<script>window.pwned=1</script>" in page.locator("h1").inner_text()
    assert page.evaluate("typeof window.pwned") == "undefined"
    raw = httpx.get(f"{server.url}/runs/{server.runs['hostile']}").text
    assert "<script>window.pwned" not in raw
    assert page.console_errors == []


def test_an_owner_only_run_asks_for_sign_in_then_shows(server: Any, page: Any) -> None:
    run_id = server.runs["owner-only"]
    answer = page.goto(f"{server.url}/runs/{run_id}")
    assert answer.status == 401
    assert page.locator("h1").inner_text() == "Sign in to see this"
    page.locator("main a.button").click()
    page.locator("#token").fill(server.tokens["alice"])
    page.locator("main button[type=submit]").click()
    page.wait_for_url(f"**/runs/{run_id}")
    assert page.locator("#status").inner_text() in ("verified", "rejected")
    assert "benchmark compatible customized instance" in page.locator("main").inner_text()
    page.goto(f"{server.url}/me")
    assert page.locator(f"a[href='/runs/{run_id}']").count() == 1


def test_another_owner_is_refused_an_owner_only_run(server: Any, page: Any) -> None:
    page.goto(f"{server.url}/signin?next=/me")
    page.locator("#token").fill(server.tokens["bob"])
    page.locator("main button[type=submit]").click()
    page.wait_for_url("**/me")
    answer = page.goto(f"{server.url}/runs/{server.runs['owner-only']}")
    assert answer.status == 403
    assert page.locator("h1").inner_text() == "This is not yours to see"


def test_a_forged_form_post_is_refused(server: Any) -> None:
    with httpx.Client(base_url=server.url) as client:
        csrf = client.get("/signin").cookies["pp_csrf"]
        token = server.tokens["alice"]
        missing = client.post("/signin", data={"token": token})
        assert missing.status_code == 403
        assert "text/html" in missing.headers["content-type"]
        assert "pp_session" not in missing.cookies
        forged = client.post("/signin", data={"token": token, "csrf": csrf[:-2] + "xx"})
        assert forged.status_code == 403
        honest = client.post("/signin", data={"token": token, "csrf": csrf})
        assert honest.status_code == 303
        assert "pp_session" in honest.cookies
    # Another site's page cannot read the cookie, so its forged form has no token.
    with httpx.Client(base_url=server.url) as stranger:
        assert stranger.post("/signout", data={"csrf": "made.up"}).status_code == 403


def test_the_session_cookie_is_secure_behind_a_tls_proxy(server: Any) -> None:
    """A proxy on loopback (trusted by default) that says HTTPS gets a Secure cookie."""
    cookies = {}
    for proto in ("http", "https"):
        forwarded = {"x-forwarded-proto": proto}
        csrf = httpx.get(f"{server.url}/signin", headers=forwarded).cookies["pp_csrf"]
        signed = httpx.post(
            f"{server.url}/signin",
            data={"token": server.tokens["alice"], "csrf": csrf},
            headers={**forwarded, "cookie": f"pp_csrf={csrf}"},
        )
        assert signed.status_code == 303
        cookies[proto] = [
            value for value in signed.headers.get_list("set-cookie") if "pp_session=" in value
        ]
    assert len(cookies["http"]) == len(cookies["https"]) == 1
    assert "secure" not in cookies["http"][0].lower()
    assert "; secure" in cookies["https"][0].lower()


@pytest.mark.parametrize(
    ("path", "status"),
    [("/no/such/page", 404), ("/runs/0123456789abcdef0123456789abcdef", 404)],
)
def test_errors_are_pages_a_person_reads(server: Any, path: str, status: int) -> None:
    answer = httpx.get(server.url + path)
    assert answer.status_code == status
    assert "text/html" in answer.headers["content-type"]
    assert "Traceback" not in answer.text
    assert "<h1>" in answer.text


def test_an_oversized_form_gets_a_413_page(server: Any) -> None:
    answer = httpx.post(f"{server.url}/signin", content=b"token=" + b"a" * 8000)
    assert answer.status_code == 413
    assert "That is too large" in answer.text


def test_api_errors_stay_problem_documents(server: Any) -> None:
    answer = httpx.get(f"{server.url}/api/v1/runs/nope")
    assert answer.status_code == 404
    assert answer.headers["content-type"] == "application/problem+json"


def test_no_serious_accessibility_violations(server: Any, browser: Any) -> None:
    axe = (VENDOR / "axe.min.js").read_text(encoding="utf-8")
    # axe is injected as an inline script, which the pages' CSP forbids on purpose.
    context = browser.new_context(bypass_csp=True)
    try:
        page = context.new_page()
        found: dict[str, list[str]] = {}
        for name, path in [*_main_pages(server), ("error", "/no/such/page")]:
            page.goto(server.url + path)
            page.add_script_tag(content=axe)
            result = page.evaluate("async () => await axe.run(document)")
            bad = [
                f"{v['id']}: {v['help']} ({len(v['nodes'])})"
                for v in result["violations"]
                if v["impact"] in ("serious", "critical")
            ]
            if bad:
                found[name] = bad
        assert found == {}
    finally:
        context.close()


def test_the_grades_list_is_linked_from_the_navigation(server: Any, page: Any) -> None:
    page.goto(f"{server.url}/targets")
    page.locator("nav[aria-label=Site] a", has_text="Corpus grades").click()
    page.wait_for_url("**/grades")
    listed = page.locator("#grades tbody tr").evaluate_all("rows => rows.map(r => r.dataset.grade)")
    assert listed == [server.grades["second"], server.grades["first"]]  # newest first


def test_the_grade_page_shows_cases_suites_and_what_changed(server: Any, page: Any) -> None:
    record = server.grade_records["second"]
    earlier = server.grade_records["first"]
    page.goto(f"{server.url}/grades/{server.grades['second']}")
    assert page.locator("#status").inner_text() == "verified"
    rows = page.locator("#cases tbody tr")
    assert rows.count() == record.denominator
    first = rows.nth(0).locator("th, td").all_inner_texts()
    manifest = load_manifest(shipped_paths("blargg")[0])
    case = manifest.cases[0]
    assert first[:4] == [case.id, case.suite, case.mode, "pass"]
    chart = page.locator("svg.suites desc").text_content()
    for suite in {c.suite for c in manifest.cases}:
        passed = sum(
            r.passed
            for r, c in zip(record.results, manifest.cases, strict=True)
            if c.suite == suite
        )
        total = sum(c.suite == suite for c in manifest.cases)
        assert f"{suite}: {passed} of {total}" in chart
    history = page.locator("#history tbody tr")
    assert history.count() == 2
    now = {r.case_id for r in record.results if r.passed}
    before = {r.case_id for r in earlier.results if r.passed}
    newly = history.nth(0).locator(".newly code").all_inner_texts()
    regressed = history.nth(0).locator(".regressed code").all_inner_texts()
    assert set(newly) == now - before
    assert set(regressed) == before - now
    assert "first grade of this lineage" in history.nth(1).inner_text()
    raw = httpx.get(f"{server.url}/grades/{server.grades['second']}").text
    assert record.candidate.command[0] not in raw  # the command ties the lineage; it is never shown
    assert page.console_errors == []


def test_an_unknown_grade_is_a_404_page(server: Any) -> None:
    answer = httpx.get(f"{server.url}/grades/{'0' * 32}")
    assert answer.status_code == 404
    assert "text/html" in answer.headers["content-type"]


def test_a_policy_run_page_shows_envelope_portfolio_actions_and_groups(
    server: Any, page: Any
) -> None:
    if "policy" not in server.runs:
        pytest.skip("the Solana world is not installed: pip install 'playproof[solana]'")
    page.goto(f"{server.url}/runs/{server.runs['policy']}")
    assert page.locator("#status").inner_text() == "verified"
    assert "localnet" in page.locator("#envelope").inner_text()
    assert page.locator("#portfolio tbody tr").count() >= 3
    verdicts = page.locator("#actions tbody tr").evaluate_all(
        "rows => rows.map(r => r.dataset.valid)"
    )
    assert verdicts == ["yes", "yes", "no", "no", "yes", "yes", "yes"]
    actions = page.locator("#actions tbody tr")
    assert "no_live_quote" in actions.nth(2).inner_text()
    assert "malformed" in actions.nth(3).inner_text()
    proof = httpx.get(f"{server.url}/api/v1/verifier/runs/{server.runs['policy']}").json()
    shown = page.locator("table.checks").evaluate_all("ts => ts.map(t => t.dataset.group)")
    assert shown[: len(proof["cats"])] == [g["group"] for g in proof["cats"]]
    assert "wallet_safety" in shown  # from the document, or decided here and labelled so
    if "wallet_safety" not in [g["group"] for g in proof["cats"]]:
        assert page.locator("table[data-group=wallet_safety] .recomputed").count() == 1
    assert page.console_errors == []


@pytest.fixture(scope="module")
def full_board(server: Any) -> Any:
    """The server, whose 2048 board holds over one page of verified runs of varied lengths."""
    assert "board-0" in server.runs
    return server


def _board_ids(server: Any, sort: str, page: int) -> list[str]:
    html = httpx.get(
        f"{server.url}/targets/native/2048/leaderboard", params={"sort": sort, "page": page}
    ).text
    return re.findall(r'<tr data-run="([0-9a-f]{32})"', html)


@pytest.mark.parametrize("sort", ["turns", "cost", "submitted", "rank", "agent"])
def test_a_sorted_board_continues_on_page_two_over_plain_http(full_board: Any, sort: str) -> None:
    api = httpx.get(f"{full_board.url}/api/v1/leaderboards/native/2048").json()
    total = api["total"]
    assert total > 50
    first, second = _board_ids(full_board, sort, 1), _board_ids(full_board, sort, 2)
    assert len(first) == 50
    assert len(first) + len(second) == total
    assert not set(first) & set(second)
    if sort == "turns":
        turns = {row["run_id"]: row["turns"] for row in _all_rows(full_board)}
        shown = [turns[run_id] for run_id in first + second]
        assert shown == sorted(shown)  # the whole board, not each page on its own
    if sort == "rank":
        assert first + second == [row["run_id"] for row in _all_rows(full_board)]
    if sort == "agent":
        assert first + second == _by_agent(_all_rows(full_board))


def _by_agent(rows: list[dict[str, Any]]) -> list[str]:
    """The run ids of ranked API rows ordered by agent (code point), ties in ranking order."""
    ranked = {row["run_id"]: place for place, row in enumerate(rows)}
    ordered = sorted(rows, key=lambda row: (row["agent"], ranked[row["run_id"]]))
    return [row["run_id"] for row in ordered]


def test_the_api_board_sorted_by_agent_continues_across_pages(full_board: Any) -> None:
    rows = _all_rows(full_board)
    assert len({row["agent"] for row in rows}) >= 4  # a board of several agents
    paged: list[dict[str, Any]] = []
    while len(paged) < len(rows):
        page = httpx.get(
            f"{full_board.url}/api/v1/leaderboards/native/2048",
            params={"sort": "agent", "limit": 7, "offset": len(paged)},
        ).json()
        assert page["rows"], "a page ended early"
        paged.extend(page["rows"])
    assert [row["run_id"] for row in paged] == _by_agent(rows)
    assert {row["run_id"]: row["rank"] for row in paged} == {r["run_id"]: r["rank"] for r in rows}


def _all_rows(server: Any) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    while True:
        page = httpx.get(
            f"{server.url}/api/v1/leaderboards/native/2048",
            params={"limit": 200, "offset": len(rows)},
        ).json()
        rows.extend(page["rows"])
        if not page["rows"] or len(rows) >= page["total"]:
            return rows


def test_a_sorted_board_continues_on_page_two_in_the_browser(
    full_board: Any, browser: Any, screenshots: Path
) -> None:
    context = browser.new_context(java_script_enabled=False)  # links only: no script needed
    try:
        page = context.new_page()
        page.goto(f"{full_board.url}/targets/native/2048/leaderboard")
        page.locator("#board thead a", has_text="Turns").click()
        page.wait_for_url("**sort=turns")
        first = page.locator("#board tbody tr").evaluate_all("rs => rs.map(r => r.dataset.run)")
        page.locator("a[rel=next]").click()
        page.wait_for_url("**page=2**")
        assert "sort=turns" in page.url
        second = page.locator("#board tbody tr").evaluate_all("rs => rs.map(r => r.dataset.run)")
        assert first + second == _board_ids(full_board, "turns", 1) + _board_ids(
            full_board, "turns", 2
        )
        turns = {row["run_id"]: row["turns"] for row in _all_rows(full_board)}
        assert turns[first[-1]] <= turns[second[0]]
        assert "the whole board sorted by turns" in page.locator("#board caption").inner_text()
        page.screenshot(path=str(screenshots / "leaderboard-sorted-page-2.png"), full_page=True)
    finally:
        context.close()


def test_a_board_sorted_by_agent_continues_on_page_two_in_the_browser(
    full_board: Any, browser: Any, screenshots: Path
) -> None:
    context = browser.new_context(java_script_enabled=False)
    try:
        page = context.new_page()
        page.goto(f"{full_board.url}/targets/native/2048/leaderboard")
        page.locator("#board thead a", has_text="Agent").click()
        page.wait_for_url("**sort=agent")
        first = page.locator("#board tbody tr").evaluate_all("rs => rs.map(r => r.dataset.run)")
        page.screenshot(path=str(screenshots / "leaderboard-by-agent.png"), full_page=True)
        page.locator("a[rel=next]").click()
        page.wait_for_url("**page=2**")
        assert "sort=agent" in page.url
        second = page.locator("#board tbody tr").evaluate_all("rs => rs.map(r => r.dataset.run)")
        assert first + second == _by_agent(_all_rows(full_board))
        assert "the whole board sorted by agent" in page.locator("#board caption").inner_text()
        sorted_by = page.locator("#board thead th[aria-sort]").inner_text()
        assert sorted_by.startswith("Agent")
    finally:
        context.close()


def _signed_in(browser: Any, server: Any, owner: str) -> Any:
    """A browser context signed in as ``owner`` (through the sign-in form)."""
    context = browser.new_context()
    page = context.new_page()
    page.goto(f"{server.url}/signin?next=/me")
    page.locator("#token").fill(server.tokens[owner])
    page.locator("main button[type=submit]").click()
    page.wait_for_url("**/me")
    return context


@pytest.mark.parametrize(
    ("mode", "source"),
    [
        ("trusted-recorder", "a recorder's signed transcript"),
        ("platform-attested", "the platform's own receipts"),
    ],
)
def test_a_non_replay_run_page_says_what_its_verdict_trusted(
    server: Any, browser: Any, screenshots: Path, mode: str, source: str
) -> None:
    run_id = server.runs[mode]
    context = _signed_in(browser, server, "alice")
    try:
        page = context.pages[0]
        page.goto(f"{server.url}/runs/{run_id}")
        proof = page.request.get(f"{server.url}/runs/{run_id}/proof.json").json()
        assert proof["run"]["verification_mode"] == mode
        assert page.locator("#status").inner_text() == "verified"
        notice = page.locator("#trust")
        assert "the game was not re-executed" in notice.locator("h3").inner_text()
        assert source in page.locator("#trust-mode").inner_text()
        assert page.locator("#trust-what").inner_text() == proof["run"]["verification_trust"]
        assert "replayed" not in page.locator("#score-h + p").inner_text()
        assert page.locator(f"a[href='/runs/{run_id}/replay']").count() == 0
        assert "there is no replay" in page.locator("#timeline-h + p").inner_text()
        page.screenshot(path=str(screenshots / f"run-{mode}.png"), full_page=True)
        viewer = page.goto(f"{server.url}/runs/{run_id}/replay")
        assert viewer.status == 409
        assert f"verified in {mode} mode" in page.locator(".detail").inner_text()
    finally:
        context.close()


def test_a_replayed_run_page_has_no_trust_notice(server: Any, page: Any) -> None:
    page.goto(f"{server.url}/runs/{server.runs['2048']}")
    assert page.locator("#trust").count() == 0
    assert "replayed this run" in page.locator("#score-h + p").inner_text()


def test_non_replay_run_pages_have_no_serious_accessibility_violations(
    server: Any, browser: Any
) -> None:
    axe = (VENDOR / "axe.min.js").read_text(encoding="utf-8")
    context = browser.new_context(bypass_csp=True)
    try:
        page = context.new_page()
        page.goto(f"{server.url}/signin?next=/me")
        page.locator("#token").fill(server.tokens["alice"])
        page.locator("main button[type=submit]").click()
        page.wait_for_url("**/me")
        found: dict[str, list[str]] = {}
        for mode in ("trusted-recorder", "platform-attested"):
            page.goto(f"{server.url}/runs/{server.runs[mode]}")
            page.add_script_tag(content=axe)
            result = page.evaluate("async () => await axe.run(document)")
            bad = [
                f"{v['id']}: {v['help']} ({len(v['nodes'])})"
                for v in result["violations"]
                if v["impact"] in ("serious", "critical")
            ]
            if bad:
                found[mode] = bad
        assert found == {}
    finally:
        context.close()


def test_a_bad_sort_is_a_page_not_a_crash(server: Any) -> None:
    answer = httpx.get(f"{server.url}/targets/native/2048/leaderboard?sort=agent%3Bdrop")
    assert answer.status_code == 422
    assert "text/html" in answer.headers["content-type"]


def test_the_new_pages_read_without_javascript(server: Any, browser: Any) -> None:
    context = browser.new_context(java_script_enabled=False)
    try:
        page = context.new_page()
        page.goto(f"{server.url}/grades/{server.grades['second']}")
        assert page.locator("#cases tbody tr").count() > 0
        assert page.locator("#history tbody tr").count() == 2
        page.locator("#history tbody tr").nth(1).locator("a").click()
        page.wait_for_url(f"**/grades/{server.grades['first']}")
        if "policy" in server.runs:
            page.goto(f"{server.url}/runs/{server.runs['policy']}")
            assert page.locator("#actions tbody tr").count() == len(server.records["policy"].inputs)
    finally:
        context.close()


@pytest.mark.parametrize("kind", ["page", "proof", "api"])
def test_head_answers_as_get_without_a_body_over_http(server: Any, kind: str) -> None:
    """Link checkers and ``curl -I`` ask with HEAD: the GET's status and headers, no body."""
    run_id = next(iter(server.runs.values()))
    path = {
        "page": f"/runs/{run_id}",
        "proof": f"/api/v1/verifier/runs/{run_id}",
        "api": "/api/v1/targets",
    }[kind]
    with server.client() as client:
        got = client.get(path)
        head = client.head(path)
    assert got.status_code == 200
    assert head.status_code == 200
    assert head.content == b""
    assert head.headers["content-type"] == got.headers["content-type"]
    if "content-length" in got.headers:
        assert head.headers["content-length"] == got.headers["content-length"]
