"""Changes the switch cannot carry out, refused before anything is written
(replayctl exits 1 with the reason in one line)."""

from __future__ import annotations

from controller.inband import InbandChannel
from controller.snapshot import read_state


class Refused(RuntimeError):
    """A change the switch cannot carry out; nothing was written."""


def refuse_capacity_cut(inband: InbandChannel, table: int, capacity: int) -> None:
    """Refuse lowering `table`'s capacity to `capacity` while it holds more experiences:
    the ring would wrap at the new capacity, but the slots above it would stay in the
    sum tree, sampled and never overwritten, and UPDATE / READ would refuse them."""
    size = read_state(inband, table).size
    if size > capacity:
        raise Refused(f"cannot lower table {table}'s capacity to {capacity}: it holds {size} "
                      f"experiences (slots 0..{size - 1}), which the switch would go on "
                      f"sampling; empty it first (replayctl reset --table {table})")
