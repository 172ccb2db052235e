"""The replay program for Tofino (p4src/replay_tna.p4, the committed IR in
p4src/build/tna) on the TNA model, deployed by the controller over P4Runtime as
a Tofino would be: the names bf-p4c's P4Info gives, the loop port, the CPU port."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

import pytest

from agent.contract import protocol
from agent.orchestration.benchmarks.tna_passes import TnaModel, tna_model
from controller import config
from controller.deploy import deploy
from tests.dataplane.packets import CONFIG, payload


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
    assert ack.priority == ack.total == protocol.priority_to_fixed(2.5)
    [(_, ack)] = bed.host("h1", protocol.insert(0, payload(2), priority=1.5, ack=True))
    assert (ack.slot, ack.stamp, ack.size) == (1, 2, 2)
    assert ack.total == protocol.priority_to_fixed(4.0)


def test_state_and_reset_go_round_the_loop_port(bed: TnaModel) -> None:
    for i in range(3):
        bed.host("h1", protocol.insert(0, payload(i), priority=1.0, ack=True))
    [state] = bed.cpu(protocol.get_state(0))
    assert state.ok and (state.size, state.total) == (3, protocol.priority_to_fixed(3.0))
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
