"""Stratum's device config for a Tofino pipeline.

A Tofino switch running Stratum (stratum_bfrt) takes its pipeline in P4Runtime's
``ForwardingPipelineConfig.p4_device_config`` as a serialized
``stratum.hal.barefoot.BfPipelineConfig`` (Stratum's ``bf.proto``). This module
assembles it from bf-p4c's output the way Stratum's ``bf_pipeline_builder``
does: the program's name and bfrt.json, then per pipeline its name, pipe scope,
context.json and tofino.bin, as the compiler's ``<program>.conf`` lists them.
The message class is built here from its field numbers, so the controller needs
no generated code for it.
"""

from __future__ import annotations

import json
from pathlib import Path

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

from controller.config import ConfigError

PACKAGE = "stratum.hal.barefoot"
_F = descriptor_pb2.FieldDescriptorProto


class BfPipelineError(ConfigError):
    """The config's Tofino pipeline folder does not hold bf-p4c output Stratum's
    builder can read."""


def _message_class() -> type:
    """BfPipelineConfig, from the field numbers of Stratum's bf.proto."""
    proto = descriptor_pb2.FileDescriptorProto(name="replay_bf_pipeline.proto",
                                               package=PACKAGE, syntax="proto3")
    msg = proto.message_type.add(name="BfPipelineConfig")
    profile = msg.nested_type.add(name="Profile")
    for name, number, kind in (("profile_name", 1, _F.TYPE_STRING),
                               ("context", 2, _F.TYPE_BYTES),
                               ("binary", 3, _F.TYPE_BYTES)):
        profile.field.add(name=name, number=number, type=kind, label=_F.LABEL_OPTIONAL)
    profile.field.add(name="pipe_scope", number=4, type=_F.TYPE_UINT32, label=_F.LABEL_REPEATED)
    msg.field.add(name="p4_name", number=1, type=_F.TYPE_STRING, label=_F.LABEL_OPTIONAL)
    msg.field.add(name="bfruntime_info", number=2, type=_F.TYPE_BYTES, label=_F.LABEL_OPTIONAL)
    msg.field.add(name="profiles", number=3, type=_F.TYPE_MESSAGE, label=_F.LABEL_REPEATED,
                  type_name=f".{PACKAGE}.BfPipelineConfig.Profile")
    pool = descriptor_pool.DescriptorPool()
    pool.Add(proto)
    descriptor = pool.FindMessageTypeByName(f"{PACKAGE}.BfPipelineConfig")
    get_class = getattr(message_factory, "GetMessageClass", None)
    if get_class is not None:
        return get_class(descriptor)
    return message_factory.MessageFactory(pool).GetPrototype(descriptor)


BfPipelineConfig = _message_class()


def find_conf(directory: Path) -> Path:
    """The one ``<program>.conf`` bf-p4c wrote into its output directory."""
    confs = sorted(Path(directory).glob("*.conf"))
    if len(confs) != 1:
        found = ", ".join(c.name for c in confs) or "none"
        raise BfPipelineError(f"{directory}: expected bf-p4c's one <program>.conf, found {found}")
    return confs[0]


def _read(conf: Path, listed: str, what: str) -> bytes:
    """A file the .conf lists: as given, else under the .conf's folder, dropping
    leading folders of the listed path (bf-p4c may list install-relative paths)."""
    path = Path(listed)
    candidates = [path] if path.is_absolute() else []
    parts = path.parts[1:] if path.is_absolute() else path.parts
    candidates += [conf.parent.joinpath(*parts[i:]) for i in range(len(parts))]
    for candidate in candidates:
        if candidate.is_file():
            return candidate.read_bytes()
    raise BfPipelineError(f"{conf}: {what} '{listed}' not found")


def build(conf: Path) -> BfPipelineConfig:
    """The BfPipelineConfig of the single program on the single device of `conf`."""
    try:
        doc = json.loads(Path(conf).read_text())
    except OSError as exc:
        raise BfPipelineError(f"{conf}: cannot read: {exc.strerror}") from None
    except json.JSONDecodeError as exc:
        raise BfPipelineError(f"{conf}: not JSON: {exc}") from None
    try:
        devices = doc["p4_devices"]
        if len(devices) != 1:
            raise BfPipelineError(f"{conf}: Stratum takes one device, the file has {len(devices)}")
        programs = devices[0]["p4_programs"]
        if len(programs) != 1:
            raise BfPipelineError(f"{conf}: one program per device config, found {len(programs)}")
        program = programs[0]
        config = BfPipelineConfig(p4_name=program["program-name"],
                                  bfruntime_info=_read(conf, program["bfrt-config"], "bfrt-config"))
        for pipeline in program["p4_pipelines"]:
            name = pipeline["p4_pipeline_name"]
            config.profiles.add(
                profile_name=name, pipe_scope=[int(p) for p in pipeline["pipe_scope"]],
                context=_read(conf, pipeline["context"], f"pipeline {name} context"),
                binary=_read(conf, pipeline["config"], f"pipeline {name} config"))
    except (KeyError, TypeError, IndexError, ValueError) as exc:
        if isinstance(exc, BfPipelineError):
            raise
        raise BfPipelineError(f"{conf}: not a bf-p4c .conf ({type(exc).__name__}: {exc})") from None
    if not config.profiles:
        raise BfPipelineError(f"{conf}: the program lists no pipeline")
    return config


def device_config(directory: Path) -> bytes:
    """``p4_device_config`` for the bf-p4c output in `directory`."""
    return build(find_conf(directory)).SerializeToString()
