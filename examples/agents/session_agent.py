"""A tiny persistent agent: one process per episode, one JSON line in, one JSON line out.

playproof starts this program once per episode and writes one request per
line. Answer each with one line ``{"input": ..., "cost_usd": ..., "turn": N}``
and flush. Echoing ``turn`` lets the driver recognise (and discard) an answer
that arrives after its decision timed out. Anything else you print is counted
as a stray line and ignored; log to stderr instead. The process keeps state
between decisions: here, how often each move left the board unchanged.

    SessionDriver(["python", "examples/agents/session_agent.py"])
"""

import json
import sys
from collections import Counter

PREFERENCE = ("down", "left", "right", "up")


def main() -> None:
    wasted: Counter[str] = Counter()
    last_board, last_move = None, None
    for line in sys.stdin:
        request = json.loads(line)
        board = request["observation"]["text"]
        if board == last_board and last_move is not None:
            wasted[last_move] += 1
        moves = [word for word in PREFERENCE if word in request["vocabulary"]]
        move = min(moves, key=lambda word: (wasted[word], moves.index(word)))
        if board == last_board and move == last_move:
            move = moves[(moves.index(move) + 1) % len(moves)]
        reply = {"input": move, "cost_usd": 0.0, "turn": request["turn"]}
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()
        last_board, last_move = board, move
    print(f"session over; wasted moves: {dict(wasted)}", file=sys.stderr)


if __name__ == "__main__":
    main()
