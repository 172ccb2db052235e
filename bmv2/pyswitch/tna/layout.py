"""Types and the packet header vector of one gress.

Every value a pass holds (header fields, header validity, metadata, intrinsic
metadata, locals) owns a slot of one flat ``list[int]``; a header or struct is a
tree of slots (``Header``, ``Struct``), a scalar one slot (``Scalar``). Slots are
fixed when the program loads: P4 has no recursion, so every local has one home.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .ir import Node, kind, name_of, path_name, unsupported


@dataclass(slots=True)
class Scalar:
    """A bit<W>, int<W> or bool value in one slot."""

    slot: int
    width: int
    signed: bool = False
    is_bool: bool = False

    @property
    def mask(self) -> int:
        return (1 << self.width) - 1


@dataclass(slots=True)
class Header:
    """A header instance: its fields in wire order, then its validity bit."""

    type_name: str
    fields: dict[str, Scalar]
    valid: int
    nbits: int = 0

    def __post_init__(self) -> None:
        self.nbits = sum(f.width for f in self.fields.values())

    @property
    def nbytes(self) -> int:
        """Bytes on the wire: a @flexible header (bridged metadata) that is not whole
        bytes is padded at its end, as bf-p4c pads it."""
        return (self.nbits + 7) // 8

    @property
    def pad(self) -> int:
        return self.nbytes * 8 - self.nbits

    def slots(self) -> list[int]:
        return [f.slot for f in self.fields.values()] + [self.valid]


@dataclass(slots=True)
class Struct:
    """A struct: named members, each a Scalar, Header or Struct."""

    type_name: str
    members: dict[str, Obj]

    def slots(self) -> list[int]:
        out: list[int] = []
        for m in self.members.values():
            out += [m.slot] if isinstance(m, Scalar) else m.slots()
        return out


Obj = Scalar | Header | Struct


class Types:
    """The program's named types, and the width of any type."""

    def __init__(self, program: Node) -> None:
        self.decls: dict[str, Node] = {}
        for obj in program["objects"]:
            if kind(obj).startswith("Type_") and name_of(obj):
                self.decls.setdefault(name_of(obj), obj)

    def resolve(self, t: Node) -> Node:
        """The declaration behind a Type_Name (typedefs resolved); other types as they are."""
        for _ in range(32):
            k = kind(t)
            if k == "Type_Name":
                name = path_name(t)
                if name not in self.decls:
                    raise unsupported(f"unknown type {name}", t)
                t = self.decls[name]
            elif k in ("Type_Typedef", "Type_Newtype"):
                t = t["type"]
            elif k == "Type_SerEnum":
                return t["type"]
            elif k == "Type_SpecializedCanonical":
                t = t["substituted"]
            else:
                return t
        raise unsupported("type alias chain too long", t)

    def width(self, t: Node) -> int:
        """Bits of a bit/int/bool/header/struct type."""
        t = self.resolve(t)
        k = kind(t)
        if k == "Type_Bits":
            return int(t["size"])
        if k == "Type_Boolean":
            return 1
        if k in ("Type_Header", "Type_Struct"):
            return sum(self.width(f["type"]) for f in t["fields"])
        if k == "Type_Error":
            return 16
        raise unsupported(f"no width for type {k}", t)

    def is_signed(self, t: Node) -> bool:
        t = self.resolve(t)
        return kind(t) == "Type_Bits" and bool(t.get("isSigned"))


@dataclass
class Phv:
    """Slot allocation for one gress; ``names`` says what each slot is (for traces)."""

    types: Types
    names: list[str] = field(default_factory=list)

    @property
    def size(self) -> int:
        return len(self.names)

    def _slot(self, name: str) -> int:
        self.names.append(name)
        return len(self.names) - 1

    def alloc(self, t: Node, name: str) -> Obj:
        """Slots for a value of type ``t``."""
        r = self.types.resolve(t)
        k = kind(r)
        if k == "Type_Bits":
            return Scalar(self._slot(name), int(r["size"]), bool(r.get("isSigned")))
        if k == "Type_Boolean":
            return Scalar(self._slot(name), 1, is_bool=True)
        if k == "Type_Error":
            return Scalar(self._slot(name), 16)
        if k == "Type_Header":
            fields = {name_of(f): self._scalar(f["type"], f"{name}.{name_of(f)}")
                      for f in r["fields"]}
            return Header(name_of(r), fields, self._slot(f"{name}.$valid"))
        if k == "Type_Struct":
            return Struct(name_of(r), {name_of(f): self.alloc(f["type"], f"{name}.{name_of(f)}")
                                       for f in r["fields"]})
        raise unsupported(f"values of type {k} ({name})", r)

    def _scalar(self, t: Node, name: str) -> Scalar:
        obj = self.alloc(t, name)
        if not isinstance(obj, Scalar):
            raise unsupported(f"header field {name} is not a scalar")
        return obj


def header_packer(h: Header, names: tuple[str, ...]) -> Callable[..., bytes]:
    """A function of the values of ``names`` (in that order) giving the header's wire
    bytes, every other field 0: how the pipeline prepends intrinsic metadata."""
    shifts, masks, shift = {}, {}, h.nbits + h.pad
    for fname, f in h.fields.items():
        shift -= f.width
        shifts[fname], masks[fname] = shift, f.mask
    parts = [(shifts[n], masks[n]) for n in names]
    nbytes = h.nbytes

    def pack(*values: int) -> bytes:
        acc = 0
        for (sh, m), v in zip(parts, values, strict=True):
            acc |= (v & m) << sh
        return acc.to_bytes(nbytes, "big")
    return pack


def const_value(node: Node) -> Any:
    """The value of a Constant / BoolLiteral node."""
    if kind(node) == "BoolLiteral":
        return bool(node["value"])
    return int(node["value"])
