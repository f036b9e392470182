"""A tiny one-shot agent (JSON mode): one request on stdin, one JSON reply on stdout.

playproof starts this program once per decision, writes the request
(``playproof/agent-request/v1``: observation, history, context) to stdin and
reads ``{"input": ..., "cost_usd": ...}`` from stdout. This agent prefers
down, left, right, up, and skips a move that just left the board unchanged.

    playproof.run("native/2048", CliDriver(["python", "examples/agents/oneshot_json_agent.py"]))
"""

import json
import sys
from typing import Any

PREFERENCE = ("down", "left", "right", "up")


def choose(request: dict[str, Any]) -> str:
    vocabulary = request["vocabulary"]
    candidates = [word for word in PREFERENCE if word in vocabulary] or vocabulary
    history = request["history"]
    board = request["observation"]["text"]
    stuck = history and history[-1]["observation"] == board
    if stuck and history[-1]["input"] in candidates:
        # The last move changed nothing: try the next preference after it.
        index = candidates.index(history[-1]["input"])
        return candidates[(index + 1) % len(candidates)]
    return candidates[0]


def main() -> None:
    request = json.load(sys.stdin)
    # This program costs nothing to run, so it says so; an LLM-backed agent
    # would report what its calls cost, or null when it cannot tell.
    json.dump({"input": choose(request), "cost_usd": 0.0}, sys.stdout)


if __name__ == "__main__":
    main()
