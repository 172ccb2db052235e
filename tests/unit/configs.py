"""Config texts the unit tests share."""

GOOD = """\
switch: {address: "127.0.0.1:9559", device_id: 0, cpu_port: 255}
replay: {vip: 198.18.0.100, vip_mac: "02:00:00:00:00:64"}
hosts:
  - {name: learner, ip: 198.18.0.1, mac: "02:00:00:00:00:01", port: 1, role: learner}
  - {name: actor1, ip: 198.18.0.2, mac: "02:00:00:00:00:02", port: 2, role: actor}
tables:
  - {id: 0, capacity: 1024, min_size: 32, max_batch: 64, mode: uniform}
acl:
  - {host: actor1, table: 0, ops: [insert]}
  - {host: learner, table: 0, ops: [sample, update]}
broadcast: {address: 198.19.255.255}
"""
