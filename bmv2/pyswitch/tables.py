"""Match-action tables: match kinds, entries, lookup structures.

Lookup follows bmv2: exact tables are a dict, LPM tables one dict per prefix
length (longest first), ternary and range tables a list sorted by priority.
Priorities follow the P4Runtime convention: the HIGHER number wins; among equal
priorities the entry with the lower handle wins (bmv2 keeps entries in handle
order). Const entries from the JSON carry bmv2 priorities (lower wins); they are
shown here as ``2**31 - 1 - bmv2_priority``, as bmv2's P4Runtime server shows
them.
"""

from __future__ import annotations

import bisect
import heapq
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from .errors import (
    ConstEntryError,
    DuplicateEntryError,
    EntryNotFoundError,
    InvalidEntryError,
    TableFullError,
    UnknownNameError,
)

BM_MAX_PRIORITY = (1 << 31) - 1


@dataclass(frozen=True, slots=True)
class Exact:
    """Exact match on ``value``."""

    value: int


@dataclass(frozen=True, slots=True)
class Lpm:
    """Longest-prefix match: the top ``prefix_len`` bits of ``value``."""

    value: int
    prefix_len: int


@dataclass(frozen=True, slots=True)
class Ternary:
    """Ternary match: ``key & mask == value & mask``."""

    value: int
    mask: int


@dataclass(frozen=True, slots=True)
class Range:
    """Range match: ``low <= key <= high``."""

    low: int
    high: int


@dataclass(frozen=True, slots=True)
class Optional_:
    """Optional match: exactly ``value``; use ``None`` for "don't care"."""

    value: int


Match = Exact | Lpm | Ternary | Range | Optional_ | None


@dataclass(frozen=True, slots=True)
class KeyField:
    """One field of a table key, as in the JSON (optional fields appear as ternary)."""

    name: str
    match_type: str
    bitwidth: int


@dataclass(frozen=True, slots=True)
class ActionParam:
    """A parameter of an action."""

    name: str
    bitwidth: int


@dataclass(frozen=True, slots=True)
class ActionInfo:
    """An action of the program: JSON name, id and parameters in order."""

    name: str
    id: int
    params: tuple[ActionParam, ...]


@dataclass(slots=True)
class TableAction:
    """An action as a table runs it: compiled function and next nodes on hit and miss."""

    info: ActionInfo
    fn: Callable[..., None]
    hit_next: Any
    miss_next: Any


@dataclass(frozen=True, slots=True)
class TableEntry:
    """A read-only view of an installed entry."""

    handle: int
    matches: tuple[Match, ...]
    action: str
    params: tuple[int, ...]
    priority: int | None
    packets: int
    bytes: int


class Entry:
    """An installed entry, as the compiled pipeline sees it."""

    __slots__ = ("action", "bytes", "fn", "handle", "key", "matches", "next", "packets",
                 "params", "priority")

    def __init__(self, action: TableAction, params: tuple[int, ...], nxt: Any) -> None:
        self.action = action
        self.fn = action.fn
        self.params = params
        self.next = nxt
        self.handle = -1
        self.key: tuple = ()
        self.matches: tuple[Match, ...] = ()
        self.priority: int | None = None
        self.packets = 0
        self.bytes = 0


def noop(pk: Any, F: list[int], P: tuple[int, ...]) -> None:
    """The function of actions that do nothing (generated code skips calling it)."""
    return None


_noop = noop


class Table:
    """One match-action table of the program."""

    def __init__(self, name: str, match_type: str, keys: Sequence[KeyField],
                 key_masks: Sequence[int | None], actions: dict[str, TableAction],
                 max_size: int, with_counters: bool, empty_next: Any) -> None:
        self.name = name
        self.match_type = match_type
        self.keys = tuple(keys)
        self.key_masks = tuple(key_masks)
        self.actions = actions
        self.max_size = max_size
        self.with_counters = with_counters
        self.needs_priority = match_type in ("ternary", "range")
        self.immutable = False
        self.const_default_action: str | None = None
        self.const_default_entry = False
        self._empty_next = empty_next
        self._initial_default: tuple[str, tuple[int, ...]] | None = None
        self.default = self._make_default(None, ())
        self._by_key: dict[tuple, Entry] = {}
        self._by_handle: dict[int, Entry] = {}
        self._free: list[int] = []
        self._next_handle = 0
        self.exact_dict: dict[Any, Entry] = {}
        self._lpm_index = next((i for i, k in enumerate(self.keys) if k.match_type == "lpm"), -1)
        self._lpm_levels: list[tuple[int, int, dict[Any, Entry]]] = []
        self._sorted: list[tuple[tuple[int, int], Entry, int, int, tuple]] = []
        self._range_pos = tuple(i for i, k in enumerate(self.keys) if k.match_type == "range")
        self._tern_pos = tuple(i for i, k in enumerate(self.keys) if k.match_type != "range")
        self._tern_shifts = self._concat_shifts(self._tern_pos)

    # ---- key layout shared with the code generator -------------------------

    def _concat_shifts(self, positions: Sequence[int]) -> tuple[int, ...]:
        shifts = []
        total = 0
        for i in reversed(positions):
            shifts.append(total)
            total += self.keys[i].bitwidth
        return tuple(reversed(shifts))

    def field_test(self, codes: Sequence[str], mask: int | None, value: int) -> str:
        """A Python condition true exactly when ``key & mask == value`` (mask None:
        ``key == value``) for the key ``key_code(codes)`` of a ternary table would
        be, tested field by field on ``codes``: fields the mask leaves out are not
        looked at, and no wide key is built (the code generator's const entries)."""
        tests = []
        for i, shift in zip(self._tern_pos, self._tern_shifts, strict=True):
            full = (1 << self.keys[i].bitwidth) - 1
            m = full if mask is None else (mask >> shift) & full
            v = (value >> shift) & full
            if v & ~m:
                return "False"            # a value bit the mask drops: never equal
            if m == full:
                tests.append(f"{codes[i]} == {v}")
            elif m:
                tests.append(f"{codes[i]} & {m} == {v}")
        if mask is not None and value & ~mask:
            return "False"
        return " and ".join(tests) or "True"

    def key_code(self, codes: Sequence[str]) -> str:
        """Python expression building this table's lookup key from per-field code."""
        if self.match_type in ("ternary", "range"):
            parts = [f"({codes[i]} << {s})" if s else f"({codes[i]})"
                     for i, s in zip(self._tern_pos, self._tern_shifts, strict=True)]
            concat = " | ".join(parts) if parts else "0"
            if self.match_type == "ternary":
                return concat
            return "(" + ", ".join([concat] + [codes[i] for i in self._range_pos]) + ",)"
        if self.match_type == "lpm" and len(codes) > 1:
            others = [codes[i] for i in range(len(codes)) if i != self._lpm_index]
            return f"(({', '.join(others)},), {codes[self._lpm_index]})"
        if len(codes) == 1:
            return codes[0]
        return "(" + ", ".join(codes) + ",)"

    # ---- lookup (called by the compiled pipeline) --------------------------

    def lookup(self, key: Any) -> Entry | None:
        """The entry hit by ``key`` (built by ``key_code``), or None on a miss."""
        mt = self.match_type
        if mt == "exact":
            return self.exact_dict.get(key)
        if mt == "lpm":
            if self._lpm_index >= 0 and len(self.keys) > 1:
                others, value = key
                for _plen, mask, d in self._lpm_levels:
                    e = d.get((others, value & mask))
                    if e is not None:
                        return e
                return None
            for _plen, mask, d in self._lpm_levels:
                e = d.get(key & mask)
                if e is not None:
                    return e
            return None
        if mt == "ternary":
            for _order, e, mask, value, _ranges in self._sorted:
                if key & mask == value:
                    return e
            return None
        concat = key[0]
        for _order, e, mask, value, ranges in self._sorted:
            if concat & mask == value:
                for (lo, hi), k in zip(ranges, key[1:], strict=True):
                    if k < lo or k > hi:
                        break
                else:
                    return e
        return None

    def ternary_entries(self) -> list[tuple[tuple[int, int], Entry, int, int, tuple]]:
        """A ternary or range table's entries in lookup order: (order, entry, mask,
        value, ranges)."""
        return list(self._sorted)

    # ---- control plane ----------------------------------------------------

    def _action(self, name: str) -> TableAction:
        act = self.actions.get(name)
        if act is None:
            raise UnknownNameError(
                f"action '{name}' is not an action of table '{self.name}' "
                f"(actions: {', '.join(sorted(self.actions))})")
        return act

    def _check_params(self, act: TableAction, params: Sequence[int]) -> tuple[int, ...]:
        spec = act.info.params
        if len(params) != len(spec):
            raise InvalidEntryError(
                f"action '{act.info.name}' takes {len(spec)} parameter(s) "
                f"({', '.join(p.name for p in spec)}), got {len(params)}")
        out = []
        for p, v in zip(spec, params, strict=True):
            if not isinstance(v, int) or v < 0 or v >> p.bitwidth:
                raise InvalidEntryError(
                    f"value {v!r} does not fit parameter '{p.name}' (bit<{p.bitwidth}>) "
                    f"of action '{act.info.name}'")
            out.append(int(v))
        return tuple(out)

    def _check_value(self, kf: KeyField, value: int, what: str) -> None:
        if not isinstance(value, int) or value < 0 or value >> kf.bitwidth:
            raise InvalidEntryError(
                f"{what} {value!r} does not fit key field '{kf.name}' (bit<{kf.bitwidth}>) "
                f"of table '{self.name}'")

    def _normalize(self, matches: Sequence[Match]) -> tuple[tuple, tuple[Match, ...]]:
        """Canonical per-field key tuple and the normalized match objects."""
        if len(matches) != len(self.keys):
            raise InvalidEntryError(
                f"table '{self.name}' has {len(self.keys)} key field(s) "
                f"({', '.join(k.name for k in self.keys)}), got {len(matches)} match(es)")
        norm: list = []
        shown: list[Match] = []
        for kf, kmask, m in zip(self.keys, self.key_masks, matches, strict=True):
            full = (1 << kf.bitwidth) - 1
            kmask = full if kmask is None else kmask
            mt = kf.match_type
            if isinstance(m, int) and not isinstance(m, bool):
                m = Exact(m)
            if mt in ("exact", "valid"):
                if not isinstance(m, Exact | Optional_):
                    raise InvalidEntryError(
                        f"key field '{kf.name}' of table '{self.name}' is exact: "
                        f"use Exact(value), not {m!r}")
                self._check_value(kf, m.value, "value")
                v = m.value & kmask
                norm.append(v)
                shown.append(Exact(v))
            elif mt == "lpm":
                if m is None:
                    m = Lpm(0, 0)
                elif isinstance(m, Exact):
                    m = Lpm(m.value, kf.bitwidth)
                if not isinstance(m, Lpm):
                    raise InvalidEntryError(
                        f"key field '{kf.name}' of table '{self.name}' is lpm: "
                        f"use Lpm(value, prefix_len), not {m!r}")
                self._check_value(kf, m.value, "value")
                if not 0 <= m.prefix_len <= kf.bitwidth:
                    raise InvalidEntryError(
                        f"prefix length {m.prefix_len} out of range for key field "
                        f"'{kf.name}' (bit<{kf.bitwidth}>) of table '{self.name}'")
                pmask = full ^ (full >> m.prefix_len)
                v = m.value & pmask & kmask
                norm.append((v, m.prefix_len))
                shown.append(Lpm(v, m.prefix_len))
            elif mt == "ternary":
                if m is None:
                    m = Ternary(0, 0)
                elif isinstance(m, Exact | Optional_):
                    m = Ternary(m.value, full)
                elif isinstance(m, Lpm):
                    self._check_value(kf, m.value, "value")
                    m = Ternary(m.value, full ^ (full >> max(0, min(m.prefix_len, kf.bitwidth))))
                if not isinstance(m, Ternary):
                    raise InvalidEntryError(
                        f"key field '{kf.name}' of table '{self.name}' is ternary/optional: "
                        f"use Ternary(value, mask), Optional_(value) or None, not {m!r}")
                self._check_value(kf, m.value, "value")
                self._check_value(kf, m.mask, "mask")
                mask = m.mask & kmask
                v = m.value & mask
                norm.append((v, mask))
                shown.append(Ternary(v, m.mask))
            else:  # range
                if m is None:
                    m = Range(0, full)
                elif isinstance(m, Exact):
                    m = Range(m.value, m.value)
                if not isinstance(m, Range):
                    raise InvalidEntryError(
                        f"key field '{kf.name}' of table '{self.name}' is range: "
                        f"use Range(low, high), not {m!r}")
                self._check_value(kf, m.low, "low")
                self._check_value(kf, m.high, "high")
                if m.low > m.high:
                    raise InvalidEntryError(
                        f"range low {m.low} > high {m.high} for key field '{kf.name}' "
                        f"of table '{self.name}'")
                norm.append((m.low, m.high))
                shown.append(m)
        return tuple(norm), tuple(shown)

    def _check_priority(self, priority: int | None) -> int | None:
        if not self.needs_priority:
            return None
        if priority is None or isinstance(priority, bool) or not isinstance(priority, int):
            raise InvalidEntryError(
                f"table '{self.name}' is {self.match_type}: entries need an integer priority")
        if not 0 <= priority <= BM_MAX_PRIORITY:
            raise InvalidEntryError(f"priority {priority} out of range 0..{BM_MAX_PRIORITY}")
        return priority

    def _new_handle(self) -> int:
        if self._free:
            return heapq.heappop(self._free)
        h = self._next_handle
        self._next_handle += 1
        return h

    def add(self, matches: Sequence[Match], action: str, params: Sequence[int],
            priority: int | None = None) -> int:
        """Install an entry; returns its handle."""
        if self.immutable:
            raise ConstEntryError(f"table '{self.name}' has const entries: they cannot change")
        act = self._action(action)
        pvals = self._check_params(act, params)
        key, shown = self._normalize(matches)
        prio = self._check_priority(priority)
        ident = (key, prio)
        if ident in self._by_key:
            raise DuplicateEntryError(
                f"table '{self.name}' already has an entry with this key"
                + (f" and priority {prio}" if prio is not None else ""))
        if len(self._by_handle) >= self.max_size:
            raise TableFullError(f"table '{self.name}' is full ({self.max_size} entries)")
        e = Entry(act, pvals, act.hit_next)
        e.handle = self._new_handle()
        e.key = key
        e.matches = shown
        e.priority = prio
        self._by_key[ident] = e
        self._by_handle[e.handle] = e
        self._insert(e)
        return e.handle

    def _insert(self, e: Entry) -> None:
        mt = self.match_type
        if mt == "exact":
            self.exact_dict[self._exact_key(e.key)] = e
        elif mt == "lpm":
            value, plen = e.key[self._lpm_index]
            full = (1 << self.keys[self._lpm_index].bitwidth) - 1
            level = self._lpm_level(plen, full ^ (full >> plen))
            level[self._lpm_key(e.key, value)] = e
        else:
            mask, value = self._tern_mask_value(e.key)
            ranges = tuple(e.key[i] for i in self._range_pos)
            order = (-(e.priority or 0), e.handle)
            bisect.insort(self._sorted, (order, e, mask, value, ranges), key=lambda t: t[0])

    def _remove(self, e: Entry) -> None:
        mt = self.match_type
        if mt == "exact":
            del self.exact_dict[self._exact_key(e.key)]
        elif mt == "lpm":
            value, plen = e.key[self._lpm_index]
            for i, (p, _mask, d) in enumerate(self._lpm_levels):
                if p == plen:
                    del d[self._lpm_key(e.key, value)]
                    if not d:
                        del self._lpm_levels[i]
                    break
        else:
            self._sorted = [t for t in self._sorted if t[1] is not e]

    def _exact_key(self, key: tuple) -> Any:
        return key[0] if len(key) == 1 else key

    def _lpm_key(self, key: tuple, value: int) -> Any:
        if len(self.keys) == 1:
            return value
        others = tuple(k for i, k in enumerate(key) if i != self._lpm_index)
        return (others, value)

    def _lpm_level(self, plen: int, mask: int) -> dict[Any, Entry]:
        for p, _m, d in self._lpm_levels:
            if p == plen:
                return d
        d: dict[Any, Entry] = {}
        self._lpm_levels.append((plen, mask, d))
        self._lpm_levels.sort(key=lambda t: -t[0])
        return d

    def _tern_mask_value(self, key: tuple) -> tuple[int, int]:
        mask = 0
        value = 0
        for i, s in zip(self._tern_pos, self._tern_shifts, strict=True):
            kf = self.keys[i]
            k = key[i]
            if kf.match_type in ("exact", "valid"):
                m, v = (1 << kf.bitwidth) - 1, k
            elif kf.match_type == "lpm":
                full = (1 << kf.bitwidth) - 1
                v, plen = k
                m = full ^ (full >> plen)
            else:
                v, m = k
            mask |= m << s
            value |= v << s
        return mask, value

    def _entry(self, handle: int) -> Entry:
        e = self._by_handle.get(handle)
        if e is None:
            raise EntryNotFoundError(f"table '{self.name}' has no entry with handle {handle}")
        return e

    def modify(self, handle: int, action: str, params: Sequence[int]) -> None:
        """Change the action and parameters of an entry."""
        if self.immutable:
            raise ConstEntryError(f"table '{self.name}' has const entries: they cannot change")
        e = self._entry(handle)
        act = self._action(action)
        e.params = self._check_params(act, params)
        e.action = act
        e.fn = act.fn
        e.next = act.hit_next

    def delete(self, handle: int) -> None:
        """Remove an entry."""
        if self.immutable:
            raise ConstEntryError(f"table '{self.name}' has const entries: they cannot change")
        e = self._entry(handle)
        self._remove(e)
        del self._by_handle[handle]
        del self._by_key[(e.key, e.priority)]
        heapq.heappush(self._free, handle)

    def clear(self) -> None:
        """Remove every entry (not the default entry)."""
        if self.immutable:
            raise ConstEntryError(f"table '{self.name}' has const entries: they cannot change")
        self._by_key.clear()
        self._by_handle.clear()
        self.exact_dict.clear()
        self._lpm_levels.clear()
        self._sorted.clear()
        self._free.clear()
        self._next_handle = 0

    def find(self, matches: Sequence[Match], priority: int | None = None) -> int | None:
        """Handle of the entry with exactly this key (and priority), or None."""
        key, _shown = self._normalize(matches)
        prio = priority if self.needs_priority else None
        e = self._by_key.get((key, prio))
        return None if e is None else e.handle

    def entries(self) -> list[TableEntry]:
        """Views of all entries, in handle order."""
        return [self._view(self._by_handle[h]) for h in sorted(self._by_handle)]

    def entry(self, handle: int) -> TableEntry:
        """View of one entry."""
        return self._view(self._entry(handle))

    def set_entry_counters(self, handle: int, packets: int, nbytes: int) -> None:
        """Set the direct counter of an entry."""
        e = self._entry(handle)
        e.packets, e.bytes = packets, nbytes

    def reset_entry_counters(self) -> None:
        """Zero the direct counters of all entries."""
        for e in self._by_handle.values():
            e.packets = e.bytes = 0

    def _view(self, e: Entry) -> TableEntry:
        return TableEntry(e.handle, e.matches, e.action.info.name, e.params, e.priority,
                          e.packets, e.bytes)

    # ---- default entry ----------------------------------------------------

    def _make_default(self, action: str | None, params: tuple[int, ...]) -> Entry:
        if action is None:
            empty = ActionInfo("", -1, ())
            e = Entry(TableAction(empty, _noop, None, self._empty_next), (), self._empty_next)
            return e
        act = self._action(action)
        return Entry(act, params, act.miss_next)

    def init_default(self, action: str, params: Sequence[int], action_const: bool,
                     entry_const: bool) -> None:
        """The program's default entry (from the JSON ``default_entry``)."""
        act = self._action(action)
        pvals = self._check_params(act, params)
        self._initial_default = (action, pvals)
        self.default = self._make_default(action, pvals)
        if action_const:
            self.const_default_action = action
        self.const_default_entry = entry_const

    def set_default(self, action: str, params: Sequence[int]) -> None:
        """Change the default (miss) entry."""
        if self.const_default_entry:
            raise ConstEntryError(f"the default entry of table '{self.name}' is const")
        act = self._action(action)
        if self.const_default_action is not None and action != self.const_default_action:
            raise ConstEntryError(
                f"the default action of table '{self.name}' is const "
                f"('{self.const_default_action}')")
        pvals = self._check_params(act, params)
        self.default = self._make_default(action, pvals)

    def reset_default(self) -> None:
        """Back to the program's default entry."""
        if self.const_default_entry:
            raise ConstEntryError(f"the default entry of table '{self.name}' is const")
        if self._initial_default is None:
            self.default = self._make_default(None, ())
        else:
            self.default = self._make_default(*self._initial_default)

    def get_default(self) -> tuple[str | None, tuple[int, ...]]:
        """Name and parameters of the default action (None when the table has none)."""
        name = self.default.action.info.name
        return (name or None), self.default.params
