"""Examples to read top to bottom (python -m agent.examples.NAME)."""
