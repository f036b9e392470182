"""playproof."""
