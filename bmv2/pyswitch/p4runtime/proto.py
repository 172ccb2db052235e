"""The P4Runtime protobuf modules, importable whatever protobuf backend is installed.

The ``p4runtime`` wheels ship pb2 files made by an old protoc that the
upb backend of protobuf >= 4 refuses ("Descriptors cannot be created
directly"). The pure-Python backend still accepts them, so it is selected here
unless the caller already chose one; this only works if nothing imported
``google.protobuf`` before, which is why every P4Runtime module of the switch
imports the protos from here. The switch owns this import (it depends on
nothing outside bmv2/pyswitch/); controller.p4runtime_proto does the same for
the controller.
"""

from __future__ import annotations

import os
import sys

if "google.protobuf" not in sys.modules:
    os.environ.setdefault("PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION", "python")

try:
    from google.rpc import code_pb2, status_pb2
    from p4.config.v1 import p4info_pb2
    from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc
except TypeError as exc:  # protobuf was imported earlier with the C runtime
    raise ImportError(
        "the p4runtime protos need PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION=python: import "
        "bmv2.pyswitch.p4runtime.proto before anything else imports google.protobuf"
    ) from exc

__all__ = ["code_pb2", "p4info_pb2", "p4runtime_pb2", "p4runtime_pb2_grpc", "status_pb2"]
