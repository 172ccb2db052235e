"""The replay program for Tofino (p4src/replay_tna.p4, the committed IR in
p4src/build/tna) on the TNA model, deployed by the controller over P4Runtime as
a Tofino would be: the names bf-p4c's P4Info gives, the loop port, the CPU port."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

import pytest

from agent.contract import protocol
from agent.orchestration.benchmarks.tna_passes import TnaModel, decode, tna_model
from controller import config
from controller.deploy import deploy
from tests.dataplane.packets import CONFIG, HEADER_FRAME, payload

fixed = protocol.priority_to_fixed


@pytest.fixture
def bed() -> Iterator[TnaModel]:
    """The TNA model in process, deployed from tests/dataplane/testbed.yaml."""
    with tna_model(config.load(CONFIG)) as model:
        assert model.switch.arch == "tna"
        yield model


def test_an_insert_is_acked_with_its_slot_stamp_and_total(bed: TnaModel) -> None:
    [(port, ack)] = bed.host("h1", protocol.insert(0, payload(1), priority=2.5, ack=True))
    assert port == bed.cfg.host("h1").port
    assert ack.ok and (ack.slot, ack.stamp, ack.size) == (0, 1, 1)
    assert ack.priority == ack.total == fixed(2.5)
    [(_, ack)] = bed.host("h1", protocol.insert(0, payload(2), priority=1.5, ack=True))
    assert (ack.slot, ack.stamp, ack.size) == (1, 2, 2)
    assert ack.total == fixed(4.0)


def test_state_and_reset_go_round_the_loop_port(bed: TnaModel) -> None:
    for i in range(3):
        bed.host("h1", protocol.insert(0, payload(i), priority=1.0, ack=True))
    [state] = bed.cpu(protocol.get_state(0))
    assert state.ok and (state.size, state.total) == (3, fixed(3.0))
    replies = bed.cpu(protocol.reset(0))
    assert replies and all(r.ok for r in replies)
    [state] = bed.cpu(protocol.get_state(0))
    assert (state.size, state.total) == (0, 0)
    assert bed.switch.stats.recirculations > 0


def test_a_host_without_the_grant_is_denied(bed: TnaModel) -> None:
    [(_, reply)] = bed.host("h2", protocol.sample(0, 1))
    assert reply.status == protocol.Status.DENIED


def test_no_pass_touches_a_register_array_twice(bed: TnaModel) -> None:
    for i in range(8):
        bed.host("h1", protocol.insert(0, payload(i), priority=1.0 + i, ack=True))
    bed.cpu(protocol.get_state(0))
    bed.cpu(protocol.reset(0))
    assert bed.switch.stats.errors == 0
    assert bed.switch._code.register_conflicts == {}


def test_a_second_deploy_finds_the_tna_program_running(bed: TnaModel) -> None:
    """bf-p4c's P4Info holds an `Any` of a type this process lacks
    (`barefoot.PortMetadata`): the deploy compares it with the running one as bytes."""
    session = bed.inband.session
    report = deploy(session, bed.cfg)
    assert not report.pipeline_pushed
    assert not (report.inserted or report.modified or report.deleted)


def test_each_host_has_its_own_insert_budget(bed: TnaModel) -> None:
    """The limiter's cell is the one its table entry names (p4test's
    GlobalCopyPropagation made it cell 0 for every host: bmv2.tna_artifacts)."""
    limited = dataclasses.replace(bed.cfg, tables=tuple(
        dataclasses.replace(t, insert_limit=3) if t.id == 0 else t for t in bed.cfg.tables))
    deploy(bed.inband.session, limited)
    statuses = [reply.status for _ in range(5)
                for _, reply in bed.host("h2", protocol.insert(0, payload(0), ack=True))]
    assert statuses == [protocol.Status.OK] * 3 + [protocol.Status.RATE_LIMITED] * 2
    [(_, reply)] = bed.host("h1", protocol.insert(0, payload(1), ack=True))
    assert reply.ok


LOOP_PORT = 68      # pipe 0's recirculation port (bmv2.pyswitch.tna.pipeline.LOOP_PORTS)
LOOP_PHASE_BYTE = 7     # loop_h.phase: the request's next phase (tna/bridge.p4)
PHASE_RECORD, PHASE_RECORD_HI = 7, 8     # a read's two record passes (tna/phases.p4)


class _Stepper:
    """The model with its loop port open: a pass bound for LOOP_PORT leaves the switch
    instead of entering ingress again, so a test runs one request's passes one by
    one and other requests' passes between them, as a Tofino's pipeline interleaves
    packets."""

    def __init__(self, bed: TnaModel) -> None:
        self.bed = bed
        self.engine = bed.switch._engine

    def __enter__(self) -> _Stepper:
        self.loop_ports, self.engine.loop_ports = self.engine.loop_ports, frozenset()
        return self

    def __exit__(self, *exc: object) -> None:
        self.engine.loop_ports = self.loop_ports

    def first(self, name: str, msg: protocol.Message) -> bytes:
        """Host `name` sends `msg`: its first loop frame."""
        [(port, frame)] = self.bed.frames(name, msg)
        assert port == LOOP_PORT
        return frame

    def step(self, frame: bytes) -> tuple[int, bytes]:
        """The next pass of the request `frame` is in: where it goes next."""
        [(port, out)] = self.bed.switch.process(LOOP_PORT, frame)
        return port, out

    def until_phase(self, frame: bytes, phase: int) -> bytes:
        """The request's passes until the one that leaves it bound for `phase`
        (loop_h's eighth byte, tna/bridge.p4)."""
        while frame[LOOP_PHASE_BYTE] != phase:
            port, frame = self.step(frame)
            assert port == LOOP_PORT
        return frame

    def finish(self, frame: bytes) -> protocol.Message:
        """Every pass left, to the reply."""
        port = LOOP_PORT
        while port == LOOP_PORT:
            port, frame = self.step(frame)
        return decode(frame)


def test_an_insert_between_an_updates_phases_keeps_its_own_priority(bed: TnaModel) -> None:
    """An UPDATE takes phase 0 (stamp guard, leaf), then the tree, then the record's
    priority, each in a pass of its own. An INSERT that overwrites the slot between
    the UPDATE's phase 0 and its record pass keeps the priority it was inserted with:
    the record's priority is written only while the record's stamp is the UPDATE's."""
    [(_, ack)] = bed.host("h1", protocol.insert(0, payload(1), priority=1.0, ack=True))
    assert (ack.slot, ack.stamp) == (0, 1)
    [state] = bed.cpu(protocol.set_state(0, pointer=0, sequence=1,
                                         max_priority_fixed=fixed(1.0), size=1))
    assert state.ok
    with _Stepper(bed) as steps:
        update = steps.first("h1", protocol.update(0, 0, 1, 5.0, ack=True))
        port, update = steps.step(update)         # phase 0: guard and leaf
        assert port == LOOP_PORT
        inserted = steps.finish(steps.first("h1", protocol.insert(0, payload(2), priority=2.0,
                                                                  ack=True)))
        updated = steps.finish(update)            # the tree, then the record
    assert (inserted.slot, inserted.stamp, inserted.priority) == (0, 2, fixed(2.0))
    assert updated.ok and updated.priority == fixed(5.0)
    [record] = bed.cpu(protocol.read(0, 0))
    assert (record.stamp, record.priority) == (2, fixed(2.0))
    assert record.payload == payload(2)
    [state] = bed.cpu(protocol.get_state(0))
    assert state.total == fixed(2.0)


def test_a_record_rewritten_between_a_samples_two_reads_is_read_again(bed: TnaModel) -> None:
    """A SAMPLE reads the record's low payload halves in one pass and the high ones
    in the next: an INSERT that rewrites the slot in between makes the read start
    over, so the reply is the new record whole, never halves of two."""
    for i in range(2):
        bed.host("h1", protocol.insert(0, payload(i + 1), priority=1.0, ack=True))
    [state] = bed.cpu(protocol.set_state(0, pointer=0, sequence=2,
                                         max_priority_fixed=fixed(1.0), size=1))
    assert state.ok
    with _Stepper(bed) as steps:
        sample = steps.first("h1", protocol.sample(0, 1, mode=protocol.Mode.UNIFORM))
        sample = steps.until_phase(sample, PHASE_RECORD_HI)
        inserted = steps.finish(steps.first("h1", protocol.insert(0, payload(7), priority=3.0,
                                                                  ack=True)))
        port, sample = steps.step(sample)         # the high halves' pass: the stamp moved
        assert (port, sample[LOOP_PHASE_BYTE]) == (LOOP_PORT, PHASE_RECORD)
        reply = steps.finish(sample)
    assert (inserted.slot, inserted.stamp) == (0, 3)
    assert reply.ok and (reply.slot, reply.stamp) == (0, 3)
    assert (reply.priority, reply.payload) == (fixed(3.0), payload(7))


def test_insert_acks_and_refusals_are_the_header_alone(bed: TnaModel) -> None:
    for msg in (protocol.insert(0, payload(1), ack=True), protocol.insert(2, payload(1), ack=True)):
        [(_, frame)] = bed.frames("h1", msg)
        assert len(frame) == HEADER_FRAME and decode(frame).payload is None


def test_single_and_batched_updates(bed: TnaModel) -> None:
    acks = [bed.host("h1", protocol.insert(0, payload(i), priority=1.0, ack=True))[0][1]
            for i in range(4)]
    [(_, one)] = bed.host("h1", protocol.update(0, acks[3].slot, acks[3].stamp, 2.0, ack=True))
    [(_, stale)] = bed.host("h1", protocol.update(0, acks[3].slot, 99, 2.0, ack=True))
    assert (one.status, stale.status) == (protocol.Status.OK, protocol.Status.STALE)
    batch = protocol.update_batch(
        0, [acks[0].slot, acks[1].slot, acks[2].slot, 200, acks[0].slot],
        [acks[0].stamp, acks[1].stamp + 5, acks[2].stamp, 1, acks[0].stamp],
        [3.0, 9.0, 0.5, 1.0, 4.0], ack=True)
    [(_, frame)] = bed.frames("h1", batch)
    assert len(frame) == HEADER_FRAME
    ack = protocol.BatchAck.of(decode(frame))
    assert (ack.entries, ack.applied, ack.stale, ack.bad_slot) == (5, 3, 1, 1)
    [state] = bed.cpu(protocol.get_state(0))
    # slot 0 twice: on Tofino the entries follow each other, so the later one's stays
    assert state.total == fixed(4.0) + fixed(1.0) + fixed(0.5) + fixed(2.0)
    assert state.priority == fixed(4.0)  # the running max
    assert bed.frames("h1", dataclasses.replace(batch, flags=0)) == []  # no ACK: silent
    assert bed.switch.stats.errors == 0
    assert bed.switch._code.register_conflicts == {}


def test_a_batch_takes_one_pass_more_than_its_updates(bed: TnaModel) -> None:
    """The batch goes round LOOP_PORT whole: one pass takes entry 0, and each entry
    then takes an UPDATE's three (its last also takes the next entry)."""
    acks = [bed.host("h1", protocol.insert(0, payload(i), priority=1.0, ack=True))[0][1]
            for i in range(4)]
    before = bed.switch.stats.recirculations
    [(_, frame)] = bed.frames("h1", protocol.update_batch(
        0, [a.slot for a in acks], [a.stamp for a in acks], [2.0] * 4, ack=True))
    assert protocol.BatchAck.of(decode(frame)).applied == 4
    assert bed.switch.stats.recirculations - before == 1 + 3 * 4


def test_a_batch_past_sixteen_entries_is_refused_and_changes_nothing(bed: TnaModel) -> None:
    """TNA cannot truncate a reply: the entries past the 16 its parser reads come back
    behind the header (docs/protocol.md)."""
    bed.host("h1", protocol.insert(0, payload(0), priority=1.0, ack=True))
    n = protocol.MAX_UPDATE_BATCH + 2
    msg = protocol.Message(op=protocol.Op.UPDATE_BATCH, table=0, flags=protocol.Flag.ACK,
                           count=n, entries=tuple(protocol.Entry(0, 1, fixed(7.0))
                                                  for _ in range(n)))
    [(_, frame)] = bed.frames("h1", msg)
    assert len(frame) == HEADER_FRAME + 2 * protocol.ENTRY_BYTES
    assert decode(frame).status == protocol.Status.BATCH_TOO_LARGE
    [state] = bed.cpu(protocol.get_state(0))
    assert state.total == fixed(1.0)
