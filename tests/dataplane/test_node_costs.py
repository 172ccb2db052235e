"""The programs of bench_node_costs.py do what its table says they do. Not on the
TNA model: they are v1model programs measuring what bmv2 and the Python switch
spend per node of a v1model pipeline, which has no TNA counterpart."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bmv2.artifacts import ToolchainMissing, find_p4c
from bmv2.pyswitch import Switch
from tests.dataplane.bench_node_costs import (
    OTHER_MAC,
    PAIRS,
    SLOTS,
    compile_program,
    frames,
    programs,
    python_switch_us,
)

K = 5
SUM = 0x8801 + K * (K + 1) // 2      # the request's EtherType plus 1 + 2 + ... + K


def _egress_shape(json_path: Path) -> tuple[int, int, int]:
    prog = json.loads(json_path.read_text())
    egress = next(p for p in prog["pipelines"] if p["name"] == "egress")
    actions = {a["id"]: a for a in prog["actions"]}
    widest = max((len(actions[i]["primitives"]) for t in egress["tables"]
                  for i in t["action_ids"]), default=0)
    return len(egress["tables"]), len(egress["conditionals"]), widest


@pytest.mark.p4c
@pytest.mark.parametrize("name", ["bare", "one_action", "statements", "record_read"])
def test_each_program_replicates_and_forwards(name: str, tmp_path: Path) -> None:
    try:
        find_p4c()
    except ToolchainMissing as exc:
        pytest.skip(str(exc))
    json_path = compile_program(programs(K)[name], tmp_path / name)
    # egress as p4c lays it out: (tables, conditionals, primitives of the widest action)
    tables, conditionals, widest = _egress_shape(json_path)
    if name == "bare":
        assert (tables, conditionals, widest) == (0, 0, 0)
    elif name == "one_action":
        assert (tables, conditionals, widest) == (1, 0, K + 2)
    elif name == "record_read":   # the draw, setValid and the record's 2 + PAIRS reads
        assert (tables, conditionals, widest) == (1, 0, 2 + 2 + PAIRS)
    else:   # the additions spread over tables of their own, one conditional each
        assert conditionals == K and tables > K and widest <= 2
    sw = Switch.from_json_file(json_path)
    sw.mc_group_set(1, [(1, rid) for rid in range(3)])
    request, forward = frames()
    if name == "record_read":   # every slot holds its own record: stamp = slot + 1
        record = {"E.stamps": 1, "E.priorities": 2, **{f"E.pair{i}": 3 + i for i in range(PAIRS)}}
        for register, base in record.items():
            for slot in range(SLOTS):
                sw.register_write(register, slot, (slot + 1) * base)
    copies = sw.process(1, request)
    assert [port for port, _ in copies] == [1, 1, 1]
    if name == "record_read":   # the record of the slot drawn, after the Ethernet header
        size = 8 + 8 * PAIRS
        for _, frame in copies:
            assert frame[:14] + frame[14 + size:] == request
            fields = frame[14:14 + size]
            stamp, priority = int.from_bytes(fields[:4], "big"), int.from_bytes(fields[4:8], "big")
            pairs = [int.from_bytes(fields[8 + 8 * i:16 + 8 * i], "big") for i in range(PAIRS)]
            assert 1 <= stamp <= SLOTS
            assert (priority, pairs) == (2 * stamp, [(3 + i) * stamp for i in range(PAIRS)])
    else:
        src_low = {frame[8:12] for _, frame in copies}
        expected = OTHER_MAC[2:] if name == "bare" else SUM.to_bytes(4, "big")
        assert src_low == {expected}
    assert [port for port, _ in sw.process(2, forward)] == [1]
    per_copy, per_forward = python_switch_us(json_path, copies=3, reps=5)
    assert per_copy > 0 and per_forward > 0
