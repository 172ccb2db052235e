"""Passes per op through the Tofino program (agent.orchestration.benchmarks.tna_passes):
what the TNA model counts is docs/hardware.md's arithmetic."""

from __future__ import annotations

from agent.orchestration.benchmarks.tna_passes import EXPECTED, count_passes
from controller.config import DEFAULT_CONFIG, load

# A reply whose four draws all overshoot draws again: at most a few of 256 replies.
REDRAW_SLACK = 0.5


def test_each_op_takes_the_passes_docs_hardware_md_gives() -> None:
    counts = {c.op: c for c in count_passes(load(DEFAULT_CONFIG))}
    assert set(counts) == set(EXPECTED)
    for op, count in counts.items():
        assert count.expected == EXPECTED[op]
        if op.startswith("SAMPLE"):
            assert EXPECTED[op] <= count.loop_passes < EXPECTED[op] + REDRAW_SLACK, count
        else:
            assert count.loop_passes == EXPECTED[op], count
    # every loop pass but a RESET copy's last (dropped there) comes back through ingress,
    # and the first ingress pass is the request's own
    assert counts["INSERT"].ingress_passes == EXPECTED["INSERT"] + 1
    assert counts["GET_STATE"].ingress_passes == EXPECTED["GET_STATE"] + 1
