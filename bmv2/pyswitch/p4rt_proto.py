"""The P4Runtime protobuf modules, importable whatever protobuf backend is installed.

The ``p4runtime`` wheels ship pb2 files made by an old protoc that the
upb backend of protobuf >= 4 refuses ("Descriptors cannot be created
directly"). The pure-Python backend still accepts them, so it is selected here
unless the caller already chose one; this only works if nothing imported
``google.protobuf`` before, which is why every P4Runtime module of the switch
imports the protos from here (a thin re-export of controller.p4runtime_proto).
"""

from __future__ import annotations

# The backend selection and the imports live in controller.p4runtime_proto;
# this module only re-exports them so the switch and the controller share one
# copy of the workaround.
from controller.p4runtime_proto import (
    code_pb2,
    p4info_pb2,
    p4runtime_pb2,
    p4runtime_pb2_grpc,
    status_pb2,
)

__all__ = ["code_pb2", "p4info_pb2", "p4runtime_pb2", "p4runtime_pb2_grpc", "status_pb2"]
