"""P4Runtime errors and the batched-write status, shaped as p4lang/PI makes them.

PI answers a Write whose updates all succeed with OK; if any fails, with
UNKNOWN and one ``p4.v1.Error`` per update packed in the google.rpc.Status
details (``code`` OK for the updates that went through, ``canonical_code``,
``message`` and space ``ALL-sswitch-p4org`` for the others).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import grpc

from bmv2.pyswitch.p4runtime.proto import code_pb2, p4runtime_pb2, status_pb2

ERROR_SPACE = "ALL-sswitch-p4org"

Code = int  # a google.rpc.Code value


class P4RuntimeError(Exception):
    """A request refused with a google.rpc code and a message."""

    def __init__(self, code: Code, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message

    @property
    def grpc_code(self) -> grpc.StatusCode:
        """The same code as a grpc.StatusCode."""
        return grpc_status_code(self.code)


class TargetError(Exception):
    """The switch refused an operation (PI maps every target error to UNKNOWN)."""

    def as_p4runtime(self, message: str) -> P4RuntimeError:
        """PI's UNKNOWN error for the operation, with the switch's reason appended."""
        return P4RuntimeError(code_pb2.UNKNOWN, f"{message}: {self}")


def grpc_status_code(code: Code) -> grpc.StatusCode:
    """The grpc.StatusCode of a google.rpc code (UNKNOWN when out of range)."""
    for status in grpc.StatusCode:
        if status.value[0] == code:
            return status
    return grpc.StatusCode.UNKNOWN


def invalid_argument(message: str) -> P4RuntimeError:
    """The INVALID_ARGUMENT error PI returns for most malformed requests."""
    return P4RuntimeError(code_pb2.INVALID_ARGUMENT, message)


def invalid_p4_id() -> P4RuntimeError:
    """PI's answer to an id that is not in the P4Info or of the wrong kind."""
    return invalid_argument("Invalid P4 id")


def unimplemented(message: str) -> P4RuntimeError:
    """What PI answers for what bmv2 does not support over P4Runtime."""
    return P4RuntimeError(code_pb2.UNIMPLEMENTED, message)


def check_update_type(update_type: int) -> None:
    """PI's answers to an update type that is not INSERT, MODIFY or DELETE."""
    if update_type == p4runtime_pb2.Update.UNSPECIFIED:
        raise invalid_argument("Update type is not set")
    if update_type not in (
        p4runtime_pb2.Update.INSERT, p4runtime_pb2.Update.MODIFY, p4runtime_pb2.Update.DELETE
    ):
        raise invalid_argument("Invalid update type")


@dataclass
class WriteErrorReporter:
    """Collects the outcome of each update of a batch, in order."""

    outcomes: list[P4RuntimeError | None] = field(default_factory=list)

    def push(self, error: P4RuntimeError | None) -> None:
        """Record one update: None when it succeeded."""
        self.outcomes.append(error)

    def status(self) -> status_pb2.Status:
        """OK, or UNKNOWN with one p4.v1.Error per update."""
        if not any(self.outcomes):
            return status_pb2.Status(code=code_pb2.OK)
        status = status_pb2.Status(code=code_pb2.UNKNOWN)
        for error in self.outcomes:
            detail = p4runtime_pb2.Error(code=code_pb2.OK)
            if error is not None:
                detail = p4runtime_pb2.Error(
                    canonical_code=error.code, message=error.message, space=ERROR_SPACE
                )
            status.details.add().Pack(detail)
        return status
