"""The SAMPLE group blocks: every sampling port's groups fit in the group ids a
switch takes, a config with more sampling ports than blocks is refused at deploy,
and a block is free only while no port and none of its group ids use it."""

from __future__ import annotations

import pytest

from controller import config
from controller.config import ConfigError
from controller.replication import (
    COPIES,
    GROUP_BLOCK,
    GROUP_ID_LIMIT,
    SAMPLE_BLOCKS,
    free_sample_base,
    sample_bases,
)


def sampling_config(hosts: int) -> config.Config:
    lines = ["replay: {vip: 198.18.0.100, vip_mac: '02:00:00:00:00:64'}", "hosts:"]
    lines += [f"  - {{name: h{i}, ip: 198.18.1.{i}, mac: '02:00:00:00:01:{i:02x}', port: {i}}}"
              for i in range(1, hosts + 1)]
    lines += ["tables: [{id: 0}]", "acl:"]
    lines += [f"  - {{host: h{i}, table: 0, ops: [sample]}}" for i in range(1, hosts + 1)]
    return config.parse("\n".join(lines))


def test_every_blocks_groups_fit_below_the_limit() -> None:
    assert SAMPLE_BLOCKS[-1] * GROUP_BLOCK + COPIES[-1] < GROUP_ID_LIMIT
    assert (SAMPLE_BLOCKS[-1] + 1) * GROUP_BLOCK + COPIES[-1] >= GROUP_ID_LIMIT


def test_more_sampling_ports_than_blocks_is_a_config_error() -> None:
    most = len(SAMPLE_BLOCKS) - 1          # the CPU port takes one block
    bases = sample_bases(sampling_config(most))
    assert len(set(bases.values())) == most + 1
    with pytest.raises(ConfigError, match=f"room for {most}"):
        sample_bases(sampling_config(most + 1))


def test_a_block_is_free_while_no_port_and_none_of_its_groups_use_it() -> None:
    first, second = (b * GROUP_BLOCK for b in SAMPLE_BLOCKS[:2])
    assert free_sample_base([], [1, 255]) == first        # block 0's groups are elsewhere
    assert free_sample_base([first], []) == second
    assert free_sample_base([], [first + 4]) == second    # one of its groups is taken
    assert free_sample_base([], [first + 3]) == first     # not one of its group ids
    every = [b * GROUP_BLOCK for b in SAMPLE_BLOCKS]
    assert free_sample_base(every, []) is None
