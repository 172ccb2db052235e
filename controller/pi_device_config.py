"""bf_switchd's device config for a Tofino pipeline: the bytes the P4Runtime
server of Intel's driver takes in ``ForwardingPipelineConfig.p4_device_config``
(open-p4studio's ``bf_switchd --p4rt-server``, built with P4RT on: PI's
generic server over bf-drivers' PI implementation).

bf-drivers' ``_pi_update_device_start`` (``src/pi/pi_imp.c``) reads them as
chunks, each a length (a uint32 copied raw, so little-endian on the x86 hosts
the driver runs on) followed by that many bytes:

  1. the program's name (at most 100 bytes)
  2. the pipeline's tofino.bin
  3. its context.json
  4. the pipeline's name (at most 100 bytes; empty would mean no chunk 5)
  5. bf-rt.json

The driver never looks at the buffer's size: it reads chunk 4 always, and
chunk 5 whenever chunk 4 is not empty, so all five are sent. It loads the one
program with its one pipeline on every pipe; a program of several pipelines
needs Stratum's form (controller/bf_pipeline.py), which has pipe scopes.

PI's server first tries the bytes as the deprecated ``p4.tmp.P4DeviceConfig``
and, if they parse, takes that message's ``device_data`` instead; chunks that
would parse so (a program name of some lengths can make them) are refused here.
"""

from __future__ import annotations

import struct
from pathlib import Path

from google.protobuf import descriptor_pb2
from google.protobuf.message import DecodeError

from controller import bf_pipeline
from controller.bf_pipeline import BfPipelineConfig, BfPipelineError

LENGTH = struct.Struct("<I")
MAX_NAME = 100          # _PI_UPDATE_MAX_NAME_SIZE in pi_imp.c
_F = descriptor_pb2.FieldDescriptorProto


def _legacy_class() -> type:
    """PI's deprecated p4.tmp.P4DeviceConfig (PI's proto/p4/tmp/p4config.proto)."""
    proto = descriptor_pb2.FileDescriptorProto(name="replay_p4config.proto", package="p4.tmp",
                                               syntax="proto3")
    msg = proto.message_type.add(name="P4DeviceConfig")
    extras = msg.nested_type.add(name="Extras")
    entry = extras.nested_type.add(name="KvEntry", options=descriptor_pb2.MessageOptions(
        map_entry=True))
    for name, number in (("key", 1), ("value", 2)):
        entry.field.add(name=name, number=number, type=_F.TYPE_STRING, label=_F.LABEL_OPTIONAL)
    extras.field.add(name="kv", number=1, type=_F.TYPE_MESSAGE, label=_F.LABEL_REPEATED,
                     type_name=".p4.tmp.P4DeviceConfig.Extras.KvEntry")
    msg.field.add(name="reassign", number=1, type=_F.TYPE_BOOL, label=_F.LABEL_OPTIONAL)
    msg.field.add(name="extras", number=2, type=_F.TYPE_MESSAGE, label=_F.LABEL_OPTIONAL,
                  type_name=".p4.tmp.P4DeviceConfig.Extras")
    msg.field.add(name="device_data", number=3, type=_F.TYPE_BYTES, label=_F.LABEL_OPTIONAL)
    return bf_pipeline.message_class(proto, "p4.tmp.P4DeviceConfig")


LegacyDeviceConfig = _legacy_class()


def chunk(data: bytes) -> bytes:
    """One chunk: the length of `data`, then `data`."""
    return LENGTH.pack(len(data)) + data


def _name(what: str, name: str) -> bytes:
    data = name.encode()
    if not 0 < len(data) <= MAX_NAME:
        raise BfPipelineError(f"{what} '{name}': bf_switchd takes 1..{MAX_NAME} bytes")
    return data


def pack(config: BfPipelineConfig) -> bytes:
    """The five chunks of the one pipeline of `config`."""
    if len(config.profiles) != 1:
        raise BfPipelineError(f"program {config.p4_name}: bf_switchd's P4Runtime server loads "
                              f"one pipeline, the program has {len(config.profiles)} (use "
                              "device_config: stratum)")
    [profile] = config.profiles
    data = b"".join(chunk(part) for part in (
        _name("program name", config.p4_name), profile.binary, profile.context,
        _name("pipeline name", profile.profile_name), config.bfruntime_info))
    try:
        LegacyDeviceConfig.FromString(data)
    except DecodeError:
        return data
    raise BfPipelineError(f"program name '{config.p4_name}': with it the device config parses as "
                          "PI's deprecated P4DeviceConfig, which bf_switchd would take instead; "
                          "rename the program")


def device_config(directory: Path) -> bytes:
    """``p4_device_config`` for bf_switchd: the bf-p4c output in `directory`
    (read as controller/bf_pipeline.py reads it), in chunks."""
    return pack(bf_pipeline.read(directory))
