"""Play native/2048 with each command-line agent mode, then verify each record by replay.

.venv/bin/python examples/run_cli_agents.py
"""

import sys
from pathlib import Path

import playproof
from playproof.drivers.cli import CliDriver
from playproof.drivers.session import SessionDriver

AGENTS = Path(__file__).parent / "agents"
PYTHON = sys.executable


def main() -> None:
    drivers: list[CliDriver | SessionDriver] = [
        # JSON mode: the agent reports its own cost with each answer.
        CliDriver([PYTHON, str(AGENTS / "oneshot_json_agent.py")]),
        # First-word mode: the cost per decision is declared here instead.
        CliDriver(
            [PYTHON, str(AGENTS / "oneshot_word_agent.py")], reply="word", fixed_cost_usd=0.0
        ),
        # One process for the whole episode, one JSON line per decision.
        SessionDriver([PYTHON, str(AGENTS / "session_agent.py")]),
    ]
    for driver in drivers:
        record = playproof.run("native/2048", driver, max_turns=60, budget_usd=1.0)
        report = playproof.verify_record(record)
        print(
            f"{driver.id:45} {record.score:>8}  spent ${record.accounting.spent_usd:.4f}  "
            f"stop={record.stop_reason.value:10} replay={report.verdict}"
        )
        print(f"{'':45} driver health: {record.provenance.driver}")


if __name__ == "__main__":
    main()
