"""The declarative config: a good file loads, bad files name line and field."""

from __future__ import annotations

from pathlib import Path

import pytest

from bmv2.testbed.netns_bed import host_table_config
from controller import config
from controller.config import ConfigError
from tests.unit.configs import GOOD


def test_good_config_loads_with_defaults() -> None:
    cfg = config.parse(GOOD)
    assert cfg.host("actor1").port == 2
    assert cfg.table(0).mode_code == 1 and cfg.table(0).enabled
    assert cfg.acl[1].mask == 0x06
    assert cfg.broadcast is not None and cfg.broadcast.members == ("actor1",)
    assert cfg.switch.cpu_port == 255
    assert cfg.table(0).storage == "auto"
    assert config.parse(GOOD.replace("mode: uniform}", "mode: uniform, storage: reference}")
                        ).table(0).storage == "reference"


def test_insert_limit_gives_each_inserting_host_a_limiter() -> None:
    assert config.parse(GOOD).insert_limiters() == []  # no limit: no entries, unlimited
    cfg = config.parse(GOOD.replace("mode: uniform}", "mode: uniform, insert_limit: 0}")
                       .replace("ops: [sample, update]", "ops: [insert, sample]"))
    assert [(lim.index, lim.table, lim.host, lim.ip, lim.max_inserts)
            for lim in cfg.insert_limiters()] == [(0, 0, "learner", "198.18.0.1", 0),
                                                  (1, 0, "actor1", "198.18.0.2", 0)]


@pytest.mark.parametrize(("old", "new", "where"), [
    ("capacity: 1024", "capacity: 5000", ":7: tables[0].capacity: must be 1..4096"),
    ("port: 2, role", "port: 1, role", ":5: hosts[1].port: '1' is already used by host learner"),
    ("ip: 198.18.0.2", "ip: 198.18.0.999", ":5: hosts[1].ip: '198.18.0.999' is not an IPv4"),
    ("ops: [insert]", "ops: [delete]", ":9: acl[0].ops: ops must be a non-empty list"),
    ("host: actor1", "host: actor9", ":9: acl[0].host: no host named 'actor9'"),
    ("mode: uniform", "mode: greedy", ":7: tables[0].mode: 'greedy' is not one of"),
    ("device_id: 0", "device_id: zero", ":1: switch.device_id: expected an integer"),
    ("role: actor}", "role: actor, colour: red}", ":5: hosts[1].colour: unknown field"),
    ("mode: uniform}", "mode: uniform, insert_limit: 70000}",
     ":7: tables[0].insert_limit: must be 0..65535 INSERTs per host per window"),
    ("mode: uniform}", "mode: uniform, storage: zip}",
     ":7: tables[0].storage: 'zip' is not one of auto, slot, float16, reference"),
    ("mode: uniform}", "mode: uniform, insert_limit: many}",
     ":7: tables[0].insert_limit: expected an integer"),
    ("device_id: 0,", "device_id: 0, target: tofino9,",
     ":1: switch.target: unknown target 'tofino9' (known: bmv2, tofino, tna)"),
    ("device_id: 0,", "device_id: 0, target: tofino,",
     ":1: switch.cpu_port: must be 64, CPU_PORT of the tofino build (p4src/tna/arch.p4)"),
    ("device_id: 0,", "device_id: 0, pipeline: no/such/dir,",
     ":1: switch.pipeline: no folder 'no/such/dir'"),
    ("device_id: 0,", "device_id: 0, device_config: pi,",
     ":1: switch.device_config: only for target tofino (the bmv2 target's device config has "
     "one form)"),
    ("cpu_port: 255", "target: tofino, device_config: pif",
     ":1: switch.device_config: 'pif' is not one of stratum, pi"),
])
def test_bad_config_names_line_and_field(old: str, new: str, where: str) -> None:
    text = GOOD.replace(old, new)
    assert text != GOOD
    with pytest.raises(ConfigError) as err:
        config.parse(text, "x.yaml")
    assert f"x.yaml{where}" in str(err.value)


BLOCK = """\
replay: {vip: 198.18.0.100, vip_mac: "02:00:00:00:00:64"}
# the switch section, misspelt
swtich:
  address: "127.0.0.1:9559"
hosts:
  learner: 1
tables: []
"""


def test_the_target_sets_the_cpu_port_and_the_pipeline_folder_is_the_configs(
        tmp_path: Path) -> None:
    assert config.parse(GOOD).switch.target.name == "bmv2"
    (tmp_path / "build").mkdir()
    path = tmp_path / "switch.yaml"
    path.write_text(GOOD.replace("cpu_port: 255", "target: tofino, pipeline: build"))
    switch = config.load(path).switch
    assert (switch.target.name, switch.cpu_port) == ("tofino", 64)
    assert switch.pipeline == str(tmp_path / "build")


def test_keys_with_block_values_are_reported_on_their_own_line() -> None:
    with pytest.raises(ConfigError, match=r"^x.yaml:3: swtich: unknown field"):
        config.parse(BLOCK, "x.yaml")
    with pytest.raises(ConfigError, match=r"^x.yaml:5: hosts: expected a list"):
        config.parse(BLOCK.replace("swtich", "switch"), "x.yaml")


def test_missing_sections_and_files_are_clear(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="missing field 'tables'"):
        config.parse("replay: {vip: 198.18.0.1, vip_mac: '02:00:00:00:00:01'}\nhosts: []\n")
    with pytest.raises(ConfigError, match="cannot read"):
        config.load(tmp_path / "nope.yaml")
    with pytest.raises(ConfigError, match="not valid YAML"):
        config.parse("hosts: [\n")


def test_the_host_server_serves_a_table_as_the_config_sets_it() -> None:
    t = config.parse(GOOD.replace("mode: uniform", "mode: prioritized")).table(0)
    c = host_table_config(t)
    assert (c.capacity, c.min_size, c.max_batch, c.default_mode) == (1024, 32, 64, t.mode_code)
    assert c.enabled and t.mode_code != 1
