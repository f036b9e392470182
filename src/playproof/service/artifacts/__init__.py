"""Content-addressed evidence artifacts: what replay regenerated, stored once per digest."""
