"""A tiny one-shot agent (first-word mode): it just prints a move.

With ``CliDriver(..., reply="word", fixed_cost_usd=0.0)`` playproof takes the
first word of stdout as the input. A bare word cannot carry a cost, so the
driver requires the per-decision cost to be declared up front.

    CliDriver(["python", "examples/agents/oneshot_word_agent.py"], reply="word", fixed_cost_usd=0.0)
"""

import json
import sys

request = json.load(sys.stdin)
moves = [word for word in ("down", "left", "right", "up") if word in request["vocabulary"]]
print(moves[request["turn"] % len(moves)] if moves else request["vocabulary"][0])
