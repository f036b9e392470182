"""Adversarial tests; ``programs/`` holds the hostile programs they start, not test modules."""

collect_ignore = ["programs"]  # scripts that run (and block on stdin) when imported
