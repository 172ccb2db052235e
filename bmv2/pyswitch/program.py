"""Loading and indexing a bmv2 JSON (p4c-bm2-ss, v1model), and the PHV layout.

The packet header vector of a packet is one flat Python list of ints. Every
header instance owns ``len(fields) + 1`` consecutive slots: its fields in
order, then its validity bit (the ``$valid$`` hidden field); a header with a
variable-length (varbit) field owns one more, the current bit width of that
field (bmv2 keeps it per instance). Metadata headers come first, so that
resetting metadata is one slice assignment; the members of a header stack are
consecutive (so ``stack[i]`` is ``base + i * stride``), so are the members of a
header union and the unions of a union stack; the ``next`` counter of each
stack is one slot after all headers.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, TypeVar

from .errors import ProgramError, UnsupportedConstruct

T = TypeVar("T")


@dataclass(slots=True)
class FieldSlot:
    """Where a field lives in the PHV and how wide it is (``width`` 0: varbit)."""

    name: str
    slot: int
    width: int
    signed: bool
    header: str

    @property
    def varbit(self) -> bool:
        """True for the variable-length field of a header."""
        return self.width == 0

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
    varbit: int | None = None
    max_bytes: int = 0
    union: str | None = None
    siblings: tuple[int, ...] = ()

    @property
    def nfields(self) -> int:
        """Number of (non-hidden) fields."""
        return len(self.fields)

    @property
    def valid_slot(self) -> int:
        """Slot of the validity bit."""
        return self.base + len(self.fields)

    @property
    def nslots(self) -> int:
        """Slots of the header: fields, validity, and the varbit width if any."""
        return len(self.fields) + (1 if self.varbit is None else 2)

    @property
    def nbytes(self) -> int:
        """Size on the wire (without the varbit field)."""
        return self.nbits // 8


@dataclass(slots=True)
class UnionInfo:
    """A header union: its member headers, consecutive in the PHV."""

    name: str
    id: int
    members: list[HeaderInfo]
    stack: str | None = None

    @property
    def base(self) -> int:
        """Slot of the first member."""
        return self.members[0].base

    @property
    def nslots(self) -> int:
        """Slots of all members."""
        return sum(m.nslots for m in self.members)

    def member(self, name: str) -> tuple[int, HeaderInfo] | None:
        """(index, header) of the member called ``name`` (as in the union type)."""
        for i, m in enumerate(self.members):
            if m.name.rsplit(".", 1)[-1] == name:
                return i, m
        return None


@dataclass(slots=True)
class StackInfo:
    """A header stack (consecutive headers of one type) or a header union stack."""

    name: str
    id: int
    headers: list[HeaderInfo]
    next_slot: int
    unions: list[UnionInfo] | None = None

    @property
    def base(self) -> int:
        """Slot of element 0."""
        return self.headers[0].base

    @property
    def stride(self) -> int:
        """Slots per element."""
        return self.unions[0].nslots if self.unions else self.headers[0].nslots

    @property
    def depth(self) -> int:
        """Number of elements."""
        return len(self.unions) if self.unions else len(self.headers)

    @property
    def valid_offset(self) -> int:
        """Offset of the validity bit in an element of a header stack."""
        return self.headers[0].nfields


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
    unions: dict[str, UnionInfo] = field(default_factory=dict)
    union_stacks: dict[str, StackInfo] = field(default_factory=dict)
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
        return _named(self.headers, name, "header", where)

    def stack(self, name: str, where: str) -> StackInfo:
        """A header stack by name."""
        return _named(self.stacks, name, "header stack", where)

    def union(self, name: str, where: str) -> UnionInfo:
        """A header union by name."""
        return _named(self.unions, name, "header union", where)

    def union_stack(self, name: str, where: str) -> StackInfo:
        """A header union stack by name."""
        return _named(self.union_stacks, name, "header union stack", where)

    def optional_field(self, name: str) -> FieldSlot | None:
        """A field by full name or alias, None when the program has no such field."""
        return self.fields.get(name)


_EMPTY_REQUIRED = {
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


def _header_types(prog: Program, j: dict[str, Any]) -> dict[str, int]:
    """Field lists of the header types; returns type name -> max bytes of varbit types."""
    types: dict[str, list[tuple[str, int, bool]]] = {}
    max_bytes: dict[str, int] = {}
    for ht in j.get("header_types", []):
        fields = []
        for f in ht["fields"]:
            fname, width = f[0], f[1]
            signed = bool(f[2]) if len(f) > 2 else False
            if width == "*":
                if ht["name"] in max_bytes:
                    raise ProgramError(f"header type '{ht['name']}' has two varbit fields")
                if signed:
                    raise UnsupportedConstruct(f"signed varbit field '{fname}' in header type "
                                               f"'{ht['name']}'")
                max_bytes[ht["name"]] = int(ht.get("max_length") or 0)
                width = 0
            elif not isinstance(width, int) or isinstance(width, bool):
                raise ProgramError(f"field '{fname}' of '{ht['name']}' has width {width!r}")
            elif width <= 0:
                raise ProgramError(f"field '{fname}' of '{ht['name']}' has width {width}")
            fields.append((fname, width, signed))
        if ht.get("length_exp") is not None:
            raise UnsupportedConstruct(f"header length expression (length_exp) in header type "
                                       f"'{ht['name']}'")
        types[ht["name"]] = fields
    prog.header_types = types
    return max_bytes


def _placement_order(j: dict[str, Any]) -> list[dict[str, Any]]:
    """Headers in PHV order: metadata, then each header with its stack, union or union stack."""
    raw_headers = j.get("headers", [])
    by_id = {h["id"]: h for h in raw_headers}
    group_of: dict[int, list[int]] = {}
    unions = {u["id"]: u for u in j.get("header_unions", [])}
    for st in j.get("header_stacks", []):
        for hid in st["header_ids"]:
            group_of[hid] = st["header_ids"]
    for u in unions.values():
        for hid in u["header_ids"]:
            group_of[hid] = u["header_ids"]
    for us in j.get("header_union_stacks", []):
        members = [hid for uid in us["header_union_ids"] for hid in unions[uid]["header_ids"]]
        for hid in members:
            group_of[hid] = members
    order: list[dict[str, Any]] = [h for h in raw_headers if h.get("metadata")]
    placed = {h["id"] for h in order}
    for h in raw_headers:
        for hid in group_of.get(h["id"], [h["id"]]):
            if hid not in placed:
                order.append(by_id[hid])
                placed.add(hid)
    return order


def _layout(prog: Program, j: dict[str, Any]) -> None:
    max_bytes = _header_types(prog, j)
    types = prog.header_types
    slot = 0
    for h in _placement_order(j):
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
        if h["header_type"] in max_bytes:  # also metadata: p4c's local varbit variables
            info.varbit = next(i for i, f in enumerate(fslots) if f.varbit)
            info.max_bytes = max_bytes[h["header_type"]]
        prog.headers[info.name] = info
        for fs in fslots:
            prog.fields[fs.name] = fs
        prog.fields[f"{info.name}.$valid$"] = FieldSlot(
            f"{info.name}.$valid$", info.valid_slot, 1, False, info.name)
        slot += info.nslots
        if h.get("metadata"):
            prog.meta_slots = slot

    ids = {h.id: h for h in prog.headers.values()}
    for st in j.get("header_stacks", []):
        members = [ids[i] for i in st["header_ids"]]
        for k, m in enumerate(members):
            m.stack = st["name"]
            if m.base != members[0].base + k * members[0].nslots:
                raise ProgramError(f"internal layout error for stack '{st['name']}'")
        prog.stacks[st["name"]] = StackInfo(st["name"], st["id"], members, slot)
        slot += 1
    union_ids: dict[int, UnionInfo] = {}
    for u in j.get("header_unions", []):
        members = [ids[i] for i in u["header_ids"]]
        for k, m in enumerate(members):
            if m.metadata or m.base != members[0].base + sum(x.nslots for x in members[:k]):
                raise ProgramError(f"internal layout error for union '{u['name']}'")
            m.union = u["name"]
            m.siblings = tuple(o.valid_slot - m.base for o in members if o is not m)
        info_u = UnionInfo(u["name"], u["id"], members)
        prog.unions[u["name"]] = union_ids[u["id"]] = info_u
    for us in j.get("header_union_stacks", []):
        elems = [union_ids[i] for i in us["header_union_ids"]]
        for k, e in enumerate(elems):
            e.stack = us["name"]
            if e.base != elems[0].base + k * elems[0].nslots or \
                    [m.type_name for m in e.members] != [m.type_name for m in elems[0].members]:
                raise ProgramError(f"internal layout error for union stack '{us['name']}'")
        prog.union_stacks[us["name"]] = StackInfo(us["name"], us["id"], elems[0].members, slot,
                                                  elems)
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


def _named(items: dict[str, T], name: str, kind: str, where: str) -> T:
    """items[name], or a ProgramError naming the unknown `kind` and where it was used."""
    found = items.get(name)
    if found is None:
        raise ProgramError(f"unknown {kind} '{name}' in {where}")
    return found
