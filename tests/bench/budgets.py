"""The smallest bench budgets that still run every job: the bench tests' options."""

TINY = ["--rounds", "1", "--inserts", "3", "--insert-rate", "8", "--sample-reps", "2",
        "--updates", "8", "--batch-sizes", "1,4", "--forward-packets", "50",
        "--forward-pings", "20", "--op-seconds", "1", "--forward-seconds", "1",
        "--budget-seconds", "60", "--pacing-reps", "2"]
