"""pp-collect, the Game Boy game written for playproof, and the tools that assemble it."""
