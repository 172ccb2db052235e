"""simple_switch packet flow: clones, resubmit, recirculate, multicast, drops, truncate,
exit, counters and registers (program v1model_flow.p4)."""

from __future__ import annotations

import struct

import pytest

from bmv2.pyswitch import InvalidEntryError, Switch, UnknownNameError

REPORT_FMT = "!BBHHHHBHBBI"
REPORT_FIELDS = ("itype_in", "itype_out", "rid", "eport", "iport", "espec", "fa", "fb", "fc",
                 "scratch", "plen")
REPORT_LEN = struct.calcsize(REPORT_FMT)
IN_PORT = 9
PAYLOAD = b"payload"


def ctl(cmd: int, arg: int = 0, arg2: int = 0, val: int = 0, passes: int = 0) -> bytes:
    return struct.pack("!BBBIIB", cmd, arg, arg2, val, 0, passes)


def report(data: bytes) -> dict[str, int]:
    return dict(zip(REPORT_FIELDS, struct.unpack(REPORT_FMT, data[:REPORT_LEN]), strict=True))


@pytest.fixture
def sw(load) -> Switch:
    s = load("v1model_flow")
    s.clone_session_set(5, port=3)
    s.clone_session_set(6, port=4)
    s.clone_session_set(8, mc_group=7)
    s.mc_group_set(7, [(2, 100), (3, 200), (2, 50)])
    return s


def run(sw: Switch, cmd: int, **kw: int) -> list[tuple[int, dict[str, int], bytes]]:
    pkt = ctl(cmd, **kw) + PAYLOAD
    return [(p, report(d), d[REPORT_LEN:]) for p, d in sw.process(IN_PORT, pkt)]


def test_normal_unicast(sw: Switch) -> None:
    [(port, r, rest)] = run(sw, 0)
    assert port == 1 and rest == ctl(0) + PAYLOAD
    # egress_spec starts egress as drop_port + 1 truncated to 9 bits
    assert r == {"itype_in": 0, "itype_out": 0, "rid": 0, "eport": 1, "iport": IN_PORT,
                 "espec": 0, "fa": 0, "fb": 0, "fc": 0, "scratch": 0x77, "plen": 19}


def test_i2e_clone_takes_field_list_at_end_of_ingress(sw: Switch) -> None:
    out = run(sw, 1)
    assert sorted(p for p, _r, _d in out) == [1, 3]
    clone = next(r for p, r, _d in out if p == 3)
    orig = next(r for p, r, _d in out if p == 1)
    assert clone["itype_out"] == 1 and orig["itype_out"] == 0
    assert clone["fa"] == 0xBB and clone["fb"] == IN_PORT + 0x100
    assert clone["scratch"] == 0 and clone["iport"] == 0  # metadata reset, not in the list
    assert clone["plen"] == 19


def test_i2e_clone_to_multicast_group(sw: Switch) -> None:
    out = run(sw, 11)
    clones = [(p, r["rid"], r["itype_out"], r["fa"]) for p, r, _d in out if r["itype_out"] == 1]
    assert clones == [(2, 50, 1, 0x11), (2, 100, 1, 0x11), (3, 200, 1, 0x11)]
    assert [p for p, r, _d in out if r["itype_out"] == 0] == [1]


def test_clone_without_session_makes_no_copy(sw: Switch) -> None:
    sw.clone_session_delete(5)
    assert [p for p, _r, _d in run(sw, 1)] == [1]


def test_e2e_clone(sw: Switch) -> None:
    out = run(sw, 5)
    assert sorted(p for p, _r, _d in out) == [1, 4]
    clone = next(r for p, r, _d in out if p == 4)
    assert clone["itype_out"] == 2 and clone["fa"] == 0xCC and clone["eport"] == 4
    # the clone carries the headers as they were at the end of the original's egress
    # (report already valid), and the original's packet length register
    assert clone["plen"] == 19 + REPORT_LEN


def test_multicast_replicas_have_rid(sw: Switch) -> None:
    out = run(sw, 2)
    assert [(p, r["rid"], r["itype_out"]) for p, r, _d in out] == \
        [(2, 50, 5), (2, 100, 5), (3, 200, 5)]
    assert sw.stats.replicas == 3


def test_multicast_to_unknown_group_drops(sw: Switch) -> None:
    sw.mc_group_delete(7)
    assert run(sw, 2) == []
    assert sw.mc_groups() == {}


def test_mark_to_drop_clears_mcast_grp(sw: Switch) -> None:
    assert run(sw, 13) == []


def test_resubmit_preserves_field_list_and_resets_the_rest(sw: Switch) -> None:
    [(port, r, _d)] = run(sw, 3)
    assert port == 1
    assert r["itype_in"] == 6 and r["fc"] == 2 and r["fb"] == 0x1234
    assert r["fa"] == 0  # not in field list 2
    assert r["iport"] == 0  # simple_switch resets all metadata of a resubmitted packet
    assert sw.stats.resubmits == 2


def test_recirculate(sw: Switch) -> None:
    [(port, r, rest)] = run(sw, 4)
    assert port == 1
    assert r["itype_in"] == 4 and r["fc"] == 3 and r["iport"] == 0
    assert rest == ctl(4, passes=3) + PAYLOAD
    assert sw.stats.recirculations == 3 and sw.stats.passes == 4


def test_recirculation_loop_is_bounded(load) -> None:
    s = load("v1model_flow", max_passes=50)
    assert s.process(IN_PORT, ctl(8) + PAYLOAD) == []
    assert s.stats.passes == 50 and s.stats.loop_limit_drops == 1
    s.process(IN_PORT, ctl(0) + PAYLOAD)
    assert s.stats.packets_out == 1


def test_drops(sw: Switch) -> None:
    assert run(sw, 9) == []   # mark_to_drop in egress
    assert run(sw, 10) == []  # egress_spec = 511 in ingress
    assert sw.stats.dropped == 2


def test_truncate(sw: Switch) -> None:
    out = sw.process(IN_PORT, ctl(6) + PAYLOAD)
    assert len(out) == 1 and len(out[0][1]) == 20


def test_exit_skips_the_rest_of_ingress(sw: Switch) -> None:
    assert [p for p, _r, _d in run(sw, 12)] == [2]


def test_counter_and_register(sw: Switch) -> None:
    sw.register_write("I.store", 3, 0xCAFE)
    [(_p, _r, rest)] = run(sw, 7, arg=2, arg2=3, val=0xDEADBEEF)
    assert struct.unpack("!I", rest[7:11])[0] == 0xCAFE
    assert sw.register_read("I.store", 2) == 0xDEADBEEF
    assert sw.counter_read("I.hits", 2) == (1, 19)
    sw.counter_write("I.hits", 2, 5, 6)
    assert sw.counter_read("I.hits", 2) == (5, 6)
    sw.counter_reset("I.hits")
    assert sw.counter_read("I.hits", 2) == (0, 0)
    sw.register_reset("I.store")
    assert sw.register_read_all("I.store") == [0] * 8


def test_counter_index_out_of_range_is_ignored(sw: Switch) -> None:
    run(sw, 7, arg=200, arg2=201)
    assert sum(sw.counter_read("I.hits", i)[0] for i in range(8)) == 0


def test_state_api_errors(sw: Switch) -> None:
    with pytest.raises(UnknownNameError):
        sw.counter_read("nope", 0)
    with pytest.raises(InvalidEntryError):
        sw.counter_read("I.hits", 8)
    with pytest.raises(InvalidEntryError):
        sw.register_write("I.store", 0, 1 << 32)
    with pytest.raises(InvalidEntryError):
        sw.mc_group_set(0, [(1, 1)])
    with pytest.raises(InvalidEntryError):
        sw.mc_group_set(1, [(512, 1)])
    with pytest.raises(InvalidEntryError):
        sw.clone_session_set(1 << 15, port=1)
    with pytest.raises(UnknownNameError):
        sw.clone_session_delete(99)
    assert set(sw.clone_sessions()) == {5, 6, 8}


def test_output_hook_and_cpu_port(load) -> None:
    s = load("v1model_flow", cpu_port=255)
    seen: list[tuple[int, bytes]] = []
    s.on_output = lambda port, data: seen.append((port, data))
    out = s.process(IN_PORT, ctl(0) + PAYLOAD)
    assert seen == out and s.cpu_port == 255


def test_emit_hands_each_frame_on_when_its_egress_pass_ends(
        sw: Switch, monkeypatch: pytest.MonkeyPatch) -> None:
    """A live switch sends a multicast's first copy before it makes the next one."""
    expected = sw.process(IN_PORT, ctl(2) + PAYLOAD)
    engine = sw._loaded()[2]
    passes = 0
    egress = engine._egress

    def counted(*args: object) -> None:
        nonlocal passes
        passes += 1
        egress(*args)

    monkeypatch.setattr(engine, "_egress", counted)
    emitted: list[tuple[int, int, bytes]] = []
    out = sw.process(IN_PORT, ctl(2) + PAYLOAD,
                     emit=lambda port, data: emitted.append((passes, port, data)))
    assert out == []
    assert [(p, d) for _n, p, d in emitted] == expected
    assert [n for n, _p, _d in emitted] == [1, 2, 3]
    assert sw.stats.packets_out == 2 * len(expected)


def test_load_replaces_pipeline_and_clears_state(sw: Switch) -> None:
    sw.register_write("I.store", 1, 7)
    sw.load(sw.program_json)
    assert sw.register_read("I.store", 1) == 0
    assert sw.mc_groups() == {} and sw.clone_sessions() == {}


def test_replicas_start_with_fresh_packet_registers(load, monkeypatch) -> None:
    """Every multicast copy's egress pass starts with the registers of a new packet,
    whatever the copy before it set (here: copy 1 recirculates)."""
    from bmv2.pyswitch.engine import Engine
    from bmv2.pyswitch.packet import Pkt

    s = load("replicate_egress")
    s.mc_group_set(1, [(2, 0), (2, 1), (2, 2), (2, 3)])
    seen: list[dict[str, object]] = []
    egress = Engine._egress

    def spy(self: Engine, pk: Pkt, *args: object) -> None:
        seen.append({a: getattr(pk, a) for a in Pkt.__slots__ if a not in ("F", "eport")})
        egress(self, pk, *args)

    monkeypatch.setattr(Engine, "_egress", spy)
    data = struct.pack("!BHI", 2, 1, 7) + PAYLOAD
    s.process(1, data)
    assert s.stats.recirculations == 1
    fresh = Pkt([], PAYLOAD, 1, len(data), data)
    want = {a: getattr(fresh, a) for a in Pkt.__slots__ if a not in ("F", "eport")}
    assert seen[:4] == [want] * 4
