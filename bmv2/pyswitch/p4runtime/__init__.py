"""The Python switch's P4Runtime server, on the terms of simple_switch_grpc.

server       the gRPC service: StreamChannel, Write, Read, pipeline config
arbitration  client arbitration (MasterArbitrationUpdate): the primary per device
device       the device: forwarding pipeline, Write and Read, packet I/O
p4info       an index of a P4Info by id and name, and bytestring conversions
tables       table entries between P4Runtime messages and the switch
table_ops    TableEntry and DirectCounterEntry writes and reads
dataplane    the thin layer between the server and the switch engine
counters     CounterEntry writes and reads (indirect counters)
pre          packet replication engine entries: multicast groups, clone sessions
packet_io    controller headers for PacketOut / PacketIn
status       P4Runtime errors and the batched-write status
proto        the P4Runtime protobuf modules, whatever protobuf backend is installed
"""
