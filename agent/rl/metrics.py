"""Training metrics: one CSV row per report, and the matching progress line."""

from __future__ import annotations

import csv
import math
from pathlib import Path

COLUMNS = ("wall_s", "learner_steps", "env_steps", "episodes", "train_return", "eval_return",
           "eval_episodes", "loss", "samples_per_s", "inserts_per_s")


class MetricsLog:
    """Appends rows of COLUMNS to a CSV file (the header once) and prints progress."""

    def __init__(self, path: Path, echo: bool = True) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        new = not path.exists() or path.stat().st_size == 0
        self._file = path.open("a", newline="")
        self._writer = csv.DictWriter(self._file, fieldnames=COLUMNS)
        if new:
            self._writer.writeheader()
        self.echo = echo

    def row(self, **values: float) -> None:
        """Write one row (missing columns empty, NaN written empty)."""
        unknown = set(values) - set(COLUMNS)
        if unknown:
            raise ValueError(f"unknown metrics columns {sorted(unknown)}")
        clean = {k: "" if isinstance(v, float) and math.isnan(v) else _fmt(v)
                 for k, v in values.items()}
        self._writer.writerow(clean)
        self._file.flush()
        if self.echo:
            print(" ".join(f"{k}={clean[k]}" for k in COLUMNS if clean.get(k, "") != ""),
                  flush=True)

    def close(self) -> None:
        self._file.close()


def _fmt(value: float) -> str:
    if isinstance(value, int):
        return str(value)
    return f"{value:.4g}" if abs(value) < 1e4 else f"{value:.0f}"
