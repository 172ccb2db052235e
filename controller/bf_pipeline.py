"""Stratum's device config for a Tofino pipeline.

A Tofino switch running Stratum (stratum_bfrt) takes its pipeline in P4Runtime's
``ForwardingPipelineConfig.p4_device_config`` as a serialized
``stratum.hal.barefoot.BfPipelineConfig`` (Stratum's ``bf.proto``). This module
assembles it from bf-p4c's output the way Stratum's ``bf_pipeline_builder``
does: the program's name and bfrt.json, then per pipeline its name, pipe scope,
context.json and tofino.bin, as the driver's ``<program>.conf`` lists them
(p4c-gen-conf writes it), or as bf-p4c's own manifest.json does. A listed
file may be kept gzipped beside where it is listed (``<name>.gz``), as the
committed build in p4src/build/tofino keeps its 12 MB context.json.
The message class is built here from its field numbers, so the controller needs
no generated code for it. controller/pi_device_config.py packs the same files
for bf_switchd's own P4Runtime server.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

from controller.config import ConfigError

PACKAGE = "stratum.hal.barefoot"
DEVICE_PIPES = 4     # a Tofino's pipes, which a program's pipelines share out
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
    return message_class(proto, f"{PACKAGE}.BfPipelineConfig")


def message_class(proto: descriptor_pb2.FileDescriptorProto, name: str) -> type:
    """The class of message `name` that `proto` describes, in a pool of its own."""
    pool = descriptor_pool.DescriptorPool()
    pool.Add(proto)
    descriptor = pool.FindMessageTypeByName(name)
    get_class = getattr(message_factory, "GetMessageClass", None)
    if get_class is not None:
        return get_class(descriptor)
    return message_factory.MessageFactory(pool).GetPrototype(descriptor)


BfPipelineConfig = _message_class()


GZIPPED = ".gz"


def read_kept(path: Path) -> bytes | None:
    """The bytes of compiler output `path`, or of `path`.gz unzipped; None if
    neither is there."""
    if path.is_file():
        return path.read_bytes()
    zipped = path.with_name(path.name + GZIPPED)
    if zipped.is_file():
        return gzip.decompress(zipped.read_bytes())
    return None


def _read(conf: Path, listed: str, what: str) -> bytes:
    """A file `conf` lists: as given, else under conf's folder, dropping leading
    folders of the listed path (a .conf may list install-relative paths); each
    place as the file or gzipped (read_kept)."""
    path = Path(listed)
    candidates = [path] if path.is_absolute() else []
    parts = path.parts[1:] if path.is_absolute() else path.parts
    candidates += [conf.parent.joinpath(*parts[i:]) for i in range(len(parts))]
    for candidate in candidates:
        data = read_kept(candidate)
        if data is not None:
            return data
    raise BfPipelineError(f"{conf}: {what} '{listed}' not found")


def build(conf: Path) -> BfPipelineConfig:
    """The BfPipelineConfig of the single program on the single device of `conf`,
    as Stratum's bf_pipeline_builder reads it."""
    doc = _json(Path(conf))
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


def _json(path: Path) -> dict:
    """The JSON document at `path`, or one line saying why not."""
    try:
        return json.loads(path.read_text())
    except OSError as exc:
        raise BfPipelineError(f"{path}: cannot read: {exc.strerror}") from None
    except json.JSONDecodeError as exc:
        raise BfPipelineError(f"{path}: not JSON: {exc}") from None


def from_manifest(manifest: Path) -> BfPipelineConfig:
    """The BfPipelineConfig of bf-p4c's own manifest.json (its -o folder as the
    compiler left it): what p4c-gen-conf would list, read from where bf-p4c put
    it, with its pipe scopes (one pipeline: every pipe)."""
    doc = _json(manifest)
    try:
        if not doc["compilation_succeeded"]:
            raise BfPipelineError(f"{manifest}: bf-p4c did not compile the program")
        programs = doc["programs"]
        if len(programs) != 1:
            raise BfPipelineError(f"{manifest}: one program per device config, found "
                                  f"{len(programs)}")
        pipes = programs[0]["pipes"]
        config = BfPipelineConfig(p4_name=Path(programs[0]["program_name"]).stem,
                                  bfruntime_info=_read(manifest, "bfrt.json", "bfrt.json"))
        for index, pipe in enumerate(pipes):
            name = pipe["pipe_name"]
            config.profiles.add(
                profile_name=name,
                pipe_scope=[x * len(pipes) + index for x in range(DEVICE_PIPES // len(pipes))],
                context=_read(manifest, pipe["files"]["context"]["path"],
                              f"pipeline {name} context"),
                binary=_read(manifest, f"{name}/{doc['target']}.bin", f"pipeline {name} binary"))
    except (KeyError, TypeError, IndexError) as exc:
        raise BfPipelineError(f"{manifest}: not bf-p4c's manifest ({type(exc).__name__}: "
                              f"{exc})") from None
    if not config.profiles:
        raise BfPipelineError(f"{manifest}: the program lists no pipeline")
    return config


def read(directory: Path) -> BfPipelineConfig:
    """The bf-p4c output in `directory` as one BfPipelineConfig: from the driver's
    ``<program>.conf`` when there is one (p4c-gen-conf's, as an SDE install has
    it), else from bf-p4c's own manifest.json."""
    directory = Path(directory)
    confs = sorted(directory.glob("*.conf"))
    if len(confs) > 1:
        raise BfPipelineError(f"{directory}: more than one <program>.conf: "
                              f"{', '.join(c.name for c in confs)}")
    if confs:
        return build(confs[0])
    if (directory / "manifest.json").is_file():
        return from_manifest(directory / "manifest.json")
    raise BfPipelineError(f"{directory}: no bf-p4c output here (neither a <program>.conf "
                          "nor bf-p4c's manifest.json)")


def device_config(directory: Path) -> bytes:
    """``p4_device_config`` for Stratum: the bf-p4c output in `directory` (read),
    serialized."""
    return read(directory).SerializeToString()
