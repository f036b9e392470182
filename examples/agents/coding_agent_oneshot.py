"""Wrap a coding-agent CLI (Claude Code, Codex, ...) as a one-shot playproof agent.

playproof runs this wrapper once per decision (``CliDriver``, JSON mode). The
wrapper turns the request into a prompt, runs the coding agent headless with
the prompt as its last argument, and answers ``{"input", "cost_usd"}``:

- with Claude Code (``claude -p PROMPT --output-format json``) the answer is
  the ``result`` field and the cost its ``total_cost_usd``;
- with any other command the answer is its stdout and the cost is ``null``
  (unmeasured: playproof records it as such and refuses a budget it cannot
  enforce).

Choose the command with ``CODING_AGENT`` (split like a shell would, but run
without a shell), e.g. ``CODING_AGENT="codex exec"``. Credentials stay in the
environment the agent already uses; never put them on a command line.

    driver = CliDriver(["python", "examples/agents/coding_agent_oneshot.py"], timeout_s=300)
"""

import json
import os
import shlex
import subprocess
import sys
from typing import Any

DEFAULT_COMMAND = "claude -p --output-format json"
TIMEOUT_S = 240  # below the driver's timeout, so a slow model fails here with a message
MAX_OUTPUT_CHARS = 1 << 20


def prompt_for(request: dict[str, Any]) -> str:
    vocabulary = ", ".join(request["vocabulary"])
    lines = [
        "You are playing a game through playproof, one input per turn.",
        f"Turn {request['turn']} of {request['max_turns']}.",
    ]
    if request.get("guidance"):
        lines.append(f"Guidance: {request['guidance']}")
    for past in request["history"][-4:]:
        lines += [f"[turn {past['turn']}]", past["observation"], f"-> {past['input']}"]
    lines += ["Current observation:", request["observation"]["text"]]
    lines.append(f"Answer with exactly one word, one of: {vocabulary}. Do not use any tools.")
    return "\n".join(lines)


def first_valid_word(text: str, vocabulary: list[str]) -> str:
    by_fold = {word.casefold(): word for word in vocabulary}
    for token in text.split():
        word = by_fold.get(token.strip("\"'`*.,:;!").casefold())
        if word is not None:
            return word
    return text.strip().split("\n")[0]  # playproof maps anything invalid to noop


def main() -> int:
    request = json.load(sys.stdin)
    command = shlex.split(os.environ.get("CODING_AGENT", DEFAULT_COMMAND))
    try:
        done = subprocess.run(
            [*command, prompt_for(request)],
            capture_output=True,
            text=True,
            timeout=TIMEOUT_S,
            stdin=subprocess.DEVNULL,
            check=False,
        )
    except subprocess.TimeoutExpired:
        print(f"{command[0]} took longer than {TIMEOUT_S} s", file=sys.stderr)
        return 1
    if done.returncode != 0:
        print(done.stderr[-2000:], file=sys.stderr)
        return done.returncode
    output = done.stdout[:MAX_OUTPUT_CHARS]
    text, cost = output, None
    try:
        parsed = json.loads(output)
    except ValueError:
        parsed = None
    if isinstance(parsed, dict) and isinstance(parsed.get("result"), str):
        text = parsed["result"]
        reported = parsed.get("total_cost_usd")
        cost = float(reported) if isinstance(reported, int | float) else None
    answer = first_valid_word(text, request["vocabulary"])
    json.dump({"input": answer, "cost_usd": cost}, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
