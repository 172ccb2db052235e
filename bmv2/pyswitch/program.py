"""Loading and indexing a bmv2 JSON (p4c-bm2-ss, v1model), and the PHV layout.

The packet header vector of a packet is one flat Python list of ints. Every
header instance owns ``len(fields) + 1`` consecutive slots: its fields in
order, then its validity bit (the ``$valid$`` hidden field). Metadata headers
come first, so that resetting metadata is one slice assignment; the members of
a header stack are consecutive (so ``stack[i]`` is ``base + i * stride``); the
``next`` counter of each stack is one slot after all headers.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .errors import ProgramError, UnsupportedConstruct


@dataclass(slots=True)
class FieldSlot:
    """Where a field lives in the PHV and how wide it is."""

    name: str
    slot: int
    width: int
    signed: bool
    header: str

    @property
    def mask(self) -> int:
        """All-ones mask of the field width."""
        return (1 << self.width) - 1


@dataclass(slots=True)
class HeaderInfo:
    """A header (or metadata struct) instance."""

    name: str
    id: int
    type_name: str
    metadata: bool
    base: int
    fields: list[FieldSlot]
    nbits: int
    stack: str | None = None

    @property
    def nfields(self) -> int:
        """Number of (non-hidden) fields."""
        return len(self.fields)

    @property
    def valid_slot(self) -> int:
        """Slot of the validity bit."""
        return self.base + len(self.fields)

    @property
    def nbytes(self) -> int:
        """Size on the wire."""
        return self.nbits // 8


@dataclass(slots=True)
class StackInfo:
    """A header stack: consecutive headers of one type."""

    name: str
    id: int
    headers: list[HeaderInfo]
    next_slot: int

    @property
    def base(self) -> int:
        """Slot of element 0."""
        return self.headers[0].base

    @property
    def stride(self) -> int:
        """Slots per element."""
        return self.headers[0].nfields + 1

    @property
    def depth(self) -> int:
        """Number of elements."""
        return len(self.headers)


@dataclass(slots=True)
class RegisterDef:
    """A register array."""

    name: str
    id: int
    size: int
    bitwidth: int


@dataclass(slots=True)
class CounterDef:
    """A counter array (direct ones are bound to a table)."""

    name: str
    id: int
    size: int
    is_direct: bool
    binding: str | None


@dataclass(slots=True)
class ActionDef:
    """An action of the JSON."""

    name: str
    id: int
    params: list[tuple[str, int]]
    primitives: list[dict[str, Any]]


@dataclass(slots=True)
class Program:
    """The indexed JSON of one P4 program."""

    json: dict[str, Any]
    headers: dict[str, HeaderInfo] = field(default_factory=dict)
    stacks: dict[str, StackInfo] = field(default_factory=dict)
    fields: dict[str, FieldSlot] = field(default_factory=dict)
    nslots: int = 0
    meta_slots: int = 0
    errors: dict[str, int] = field(default_factory=dict)
    actions: dict[int, ActionDef] = field(default_factory=dict)
    registers: dict[str, RegisterDef] = field(default_factory=dict)
    counters: dict[str, CounterDef] = field(default_factory=dict)
    calculations: dict[str, dict[str, Any]] = field(default_factory=dict)
    field_lists: dict[int, list[FieldSlot]] = field(default_factory=dict)
    parser: dict[str, Any] = field(default_factory=dict)
    deparser: dict[str, Any] = field(default_factory=dict)
    pipelines: dict[str, dict[str, Any]] = field(default_factory=dict)
    checksums: list[dict[str, Any]] = field(default_factory=list)
    header_types: dict[str, list[tuple[str, int, bool]]] = field(default_factory=dict)

    def field_slot(self, header: str, name: str, where: str) -> FieldSlot:
        """The slot of ``header.name`` (aliases resolved)."""
        f = self.fields.get(f"{header}.{name}")
        if f is None:
            raise ProgramError(f"unknown field '{header}.{name}' in {where}")
        return f

    def header(self, name: str, where: str) -> HeaderInfo:
        """A header instance by name."""
        h = self.headers.get(name)
        if h is None:
            raise ProgramError(f"unknown header '{name}' in {where}")
        return h

    def stack(self, name: str, where: str) -> StackInfo:
        """A header stack by name."""
        s = self.stacks.get(name)
        if s is None:
            raise ProgramError(f"unknown header stack '{name}' in {where}")
        return s

    def optional_field(self, name: str) -> FieldSlot | None:
        """A field by full name or alias, None when the program has no such field."""
        return self.fields.get(name)


_EMPTY_REQUIRED = {
    "header_unions": "header unions",
    "header_union_stacks": "header union stacks",
    "parse_vsets": "parser value sets",
    "meter_arrays": "meters",
    "extern_instances": "extern instances",
    "learn_lists": "digests (learn lists)",
}

_REQUIRED_FIELDS = ("ingress_port", "packet_length", "instance_type", "egress_spec",
                    "egress_port")


def load_program(j: dict[str, Any]) -> Program:
    """Index a bmv2 JSON; raises ProgramError / UnsupportedConstruct."""
    if not isinstance(j, dict):
        raise ProgramError("a bmv2 JSON program is a JSON object")
    version = (j.get("__meta__") or {}).get("version")
    if version is not None and (not isinstance(version, list) or version[:1] != [2]):
        raise UnsupportedConstruct(f"bmv2 JSON format version {version} (2.x supported)")
    for key, what in _EMPTY_REQUIRED.items():
        if j.get(key):
            names = ", ".join(str(x.get("name")) for x in j[key] if isinstance(x, dict))
            raise UnsupportedConstruct(f"{what} ({key}: {names})")
    prog = Program(json=j)
    try:
        _layout(prog, j)
        _index(prog, j)
    except (KeyError, TypeError, IndexError, ValueError) as e:
        raise ProgramError(f"malformed bmv2 JSON: {e!r}") from e
    for name in _REQUIRED_FIELDS:
        if f"standard_metadata.{name}" not in prog.fields:
            raise ProgramError(f"v1model needs field standard_metadata.{name}")
    return prog


def _layout(prog: Program, j: dict[str, Any]) -> None:
    types: dict[str, list[tuple[str, int, bool]]] = {}
    for ht in j.get("header_types", []):
        fields = []
        for f in ht["fields"]:
            fname, width = f[0], f[1]
            signed = bool(f[2]) if len(f) > 2 else False
            if not isinstance(width, int):
                raise UnsupportedConstruct(
                    f"variable-length field '{fname}' in header type '{ht['name']}'")
            if width <= 0:
                raise ProgramError(f"field '{fname}' of '{ht['name']}' has width {width}")
            fields.append((fname, width, signed))
        if "length_exp" in ht and ht["length_exp"] is not None:
            raise UnsupportedConstruct(f"variable-length header type '{ht['name']}'")
        types[ht["name"]] = fields
    prog.header_types = types

    raw_headers = j.get("headers", [])
    by_id = {h["id"]: h for h in raw_headers}
    stack_of: dict[int, dict[str, Any]] = {}
    for st in j.get("header_stacks", []):
        for hid in st["header_ids"]:
            stack_of[hid] = st
    order: list[dict[str, Any]] = [h for h in raw_headers if h.get("metadata")]
    placed = {h["id"] for h in order}
    for h in raw_headers:
        if h["id"] in placed:
            continue
        st = stack_of.get(h["id"])
        members = [by_id[i] for i in st["header_ids"]] if st else [h]
        for m in members:
            if m["id"] not in placed:
                order.append(m)
                placed.add(m["id"])

    slot = 0
    for h in order:
        ftypes = types.get(h["header_type"])
        if ftypes is None:
            raise ProgramError(f"header '{h['name']}' has unknown type '{h['header_type']}'")
        fslots = [FieldSlot(f"{h['name']}.{n}", slot + i, w, s, h["name"])
                  for i, (n, w, s) in enumerate(ftypes)]
        nbits = sum(w for _n, w, _s in ftypes)
        if not h.get("metadata") and nbits % 8:
            raise ProgramError(f"header '{h['name']}' is {nbits} bits, not a whole number of bytes")
        info = HeaderInfo(h["name"], h["id"], h["header_type"], bool(h.get("metadata")), slot,
                          fslots, nbits)
        prog.headers[info.name] = info
        for fs in fslots:
            prog.fields[fs.name] = fs
        prog.fields[f"{info.name}.$valid$"] = FieldSlot(
            f"{info.name}.$valid$", info.valid_slot, 1, False, info.name)
        slot += len(fslots) + 1
        if h.get("metadata"):
            prog.meta_slots = slot

    ids = {h.id: h for h in prog.headers.values()}
    for st in j.get("header_stacks", []):
        members = [ids[i] for i in st["header_ids"]]
        for k, m in enumerate(members):
            m.stack = st["name"]
            if m.base != members[0].base + k * (members[0].nfields + 1):
                raise ProgramError(f"internal layout error for stack '{st['name']}'")
        prog.stacks[st["name"]] = StackInfo(st["name"], st["id"], members, slot)
        slot += 1
    prog.nslots = slot

    for alias in j.get("field_aliases", []):
        src, (hname, fname) = alias[0], alias[1]
        target = prog.fields.get(f"{hname}.{fname}")
        if target is None:
            raise ProgramError(f"field alias '{src}' names unknown field '{hname}.{fname}'")
        prog.fields[src] = target


def _index(prog: Program, j: dict[str, Any]) -> None:
    prog.errors = {name: value for name, value in j.get("errors", [])}
    for a in j.get("actions", []):
        params = [(p["name"], int(p["bitwidth"])) for p in a.get("runtime_data", [])]
        prog.actions[a["id"]] = ActionDef(a["name"], a["id"], params, a.get("primitives", []))
    for r in j.get("register_arrays", []):
        prog.registers[r["name"]] = RegisterDef(r["name"], r["id"], int(r["size"]),
                                                int(r["bitwidth"]))
    for c in j.get("counter_arrays", []):
        prog.counters[c["name"]] = CounterDef(c["name"], c["id"], int(c.get("size", 0)),
                                              bool(c.get("is_direct")), c.get("binding"))
    for calc in j.get("calculations", []):
        prog.calculations[calc["name"]] = calc
    for fl in j.get("field_lists", []):
        slots = []
        for el in fl.get("elements", []):
            if el.get("type") == "field":
                slots.append(prog.field_slot(el["value"][0], el["value"][1],
                                             f"field list '{fl.get('name')}'"))
            elif el.get("type") != "hexstr":
                raise UnsupportedConstruct(
                    f"field list element type '{el.get('type')}' in field list '{fl.get('name')}'")
        prog.field_lists[int(fl["id"])] = slots
    parsers = {p["name"]: p for p in j.get("parsers", [])}
    deparsers = {d["name"]: d for d in j.get("deparsers", [])}
    if "parser" not in parsers or "deparser" not in deparsers:
        raise ProgramError("simple_switch needs a parser named 'parser' and a deparser "
                           "named 'deparser'")
    extra = (set(parsers) - {"parser"}) | (set(deparsers) - {"deparser"})
    if extra:
        raise UnsupportedConstruct(f"more than one parser/deparser ({', '.join(sorted(extra))})")
    prog.parser = parsers["parser"]
    prog.deparser = deparsers["deparser"]
    prog.pipelines = {p["name"]: p for p in j.get("pipelines", [])}
    for name in ("ingress", "egress"):
        if name not in prog.pipelines:
            raise ProgramError(f"simple_switch needs a pipeline named '{name}'")
    extra = set(prog.pipelines) - {"ingress", "egress"}
    if extra:
        raise UnsupportedConstruct(f"pipelines other than ingress/egress ({', '.join(extra)})")
    prog.checksums = list(j.get("checksums", []))
