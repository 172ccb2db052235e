"""The in-process Python switch: load a program, run packets, manage its state.

A program is a bmv2 JSON (v1model, run with simple_switch's semantics) or p4test's
IR of a TNA program (run by the TNA execution model, ``tna/``); the PRE, the
tables and everything the control plane calls are the same for both. Every
method takes one lock, so the switch can be shared between threads (a P4Runtime
server, port readers). Names are those of the JSON / P4Info.
"""

from __future__ import annotations

import json
import random
import threading
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from .compiler import compile_program
from .engine import Engine, OutputHook, Stats
from .errors import InvalidEntryError, PySwitchError, UnknownNameError
from .info import ProgramInfo, program_info
from .pre import CloneSession, Pre, Replica
from .program import load_program
from .tables import Match, Table, TableEntry
from .tna import TnaEngine, compile_tna, is_tna_program, load_ir, tna_program_info
from .tna.externs import RegisterArray


class Switch:
    """A switch executing a v1model program (p4c's bmv2 JSON, simple_switch semantics)
    or a TNA program (p4test's IR, the TNA execution model)."""

    def __init__(self, program: dict[str, Any] | None = None, *, drop_port: int = 511,
                 cpu_port: int | None = None, max_passes: int = 10_000,
                 max_egress_runs: int = 100_000, seed: int | None = None,
                 loop_ports: tuple[int, ...] = (68,)) -> None:
        self.drop_port = drop_port
        self.cpu_port = cpu_port
        self.loop_ports = loop_ports
        self.max_passes = max_passes
        self.max_egress_runs = max_egress_runs
        self.on_output: OutputHook | None = None
        self.stats = Stats()
        self._rng = random.Random(seed)
        self._lock = threading.RLock()
        self._pre = Pre()
        self._prog: Any = None          # Program (v1model) or the IR (TNA)
        self._code: Any = None          # Compiled or TnaCompiled
        self._engine: Any = None        # Engine or TnaEngine
        self._info: ProgramInfo | None = None
        if program is not None:
            self.load(program)

    @classmethod
    def from_json_file(cls, path: str | Path, **kwargs: Any) -> Switch:
        """A switch running the bmv2 JSON at ``path``."""
        with open(path, encoding="utf-8") as fh:
            return cls(json.load(fh), **kwargs)

    # ---- pipeline ---------------------------------------------------------

    def load(self, program: dict[str, Any]) -> None:
        """Replace the pipeline; tables, registers, counters, groups and sessions start empty.

        Raises UnsupportedConstruct / ProgramError, leaving the old pipeline running.
        """
        if is_tna_program(program):
            self._load_tna(program)
            return
        prog = load_program(program)
        code = compile_program(prog, self.drop_port, self._rng)
        info = program_info(prog, code)
        with self._lock:
            self._pre.clear()
            self._prog, self._code, self._info = prog, code, info
            self._engine = Engine(prog, code, self._pre, self.stats, self.drop_port,
                                  self.max_passes, self.max_egress_runs)

    def _load_tna(self, program: dict[str, Any]) -> None:
        ir = load_ir(program)
        code = compile_tna(ir, self._rng)
        info = tna_program_info(code)
        with self._lock:
            self._pre.clear()
            self._prog, self._code, self._info = ir, code, info
            self._engine = TnaEngine(code, self._pre, self.stats, cpu_port=self.cpu_port,
                                     loop_ports=self.loop_ports, max_passes=self.max_passes,
                                     max_egress_runs=self.max_egress_runs)

    @property
    def arch(self) -> str:
        """'v1model' or 'tna': the architecture of the loaded program."""
        return "tna" if isinstance(self._engine, TnaEngine) else "v1model"

    @property
    def loaded(self) -> bool:
        """True once a pipeline is loaded."""
        return self._code is not None

    @property
    def info(self) -> ProgramInfo:
        """Tables, actions, counters, registers and header types of the loaded program."""
        if self._info is None:
            raise PySwitchError("no pipeline loaded")
        return self._info

    @property
    def program_json(self) -> dict[str, Any]:
        """The bmv2 JSON (or the IR) of the loaded program."""
        prog = self._loaded()[0]
        return prog if isinstance(prog, dict) else prog.json

    @property
    def generated_source(self) -> str:
        """The Python source generated for the loaded program (for debugging)."""
        return self._loaded()[1].source

    def _loaded(self) -> tuple[Any, Any, Any]:
        if self._prog is None or self._code is None or self._engine is None:
            raise PySwitchError("no pipeline loaded")
        return self._prog, self._code, self._engine

    # ---- packets ----------------------------------------------------------

    def process(self, port: int, data: bytes,
                emit: OutputHook | None = None) -> list[tuple[int, bytes]]:
        """Run one packet through everything it causes; what leaves each port, in order.

        Never raises for a bad packet: errors are counted in ``stats`` and the
        packet is dropped. ``on_output`` (if set) is called for each output
        after the switch lock is released. With ``emit``, each output is instead
        handed to it as soon as its egress pass ends (under the switch lock), and
        the list returned is empty: a live switch sends a SAMPLE's first replies
        while it still makes the later ones.
        """
        with self._lock:
            engine = self._engine
            if engine is None or not isinstance(port, int) or not 0 <= port < 512:
                self.stats.packets_in += 1
                self.stats.dropped += 1
                return []
            out = engine.run(port, bytes(data), emit)
        hook = self.on_output
        if hook is not None:
            for p, d in out:
                hook(p, d)
        return out

    # ---- tables -----------------------------------------------------------

    def _table(self, name: str) -> Table:
        t = self._loaded()[1].tables.get(name)
        if t is None:
            raise UnknownNameError(f"no table '{name}' in the program")
        return t

    def table_add(self, table: str, matches: Sequence[Match], action: str,
                  params: Sequence[int] = (), priority: int | None = None) -> int:
        """Install an entry; returns its handle. Higher priority wins (P4Runtime rule)."""
        with self._lock:
            return self._table(table).add(matches, action, params, priority)

    def table_modify(self, table: str, handle: int, action: str,
                     params: Sequence[int] = ()) -> None:
        """Change the action of an entry."""
        with self._lock:
            self._table(table).modify(handle, action, params)

    def table_delete(self, table: str, handle: int) -> None:
        """Remove an entry."""
        with self._lock:
            self._table(table).delete(handle)

    def table_set_default(self, table: str, action: str, params: Sequence[int] = ()) -> None:
        """Set the default (miss) action."""
        with self._lock:
            self._table(table).set_default(action, params)

    def table_reset_default(self, table: str) -> None:
        """Back to the program's default action."""
        with self._lock:
            self._table(table).reset_default()

    def table_get_default(self, table: str) -> tuple[str | None, tuple[int, ...]]:
        """Name and parameters of the default action."""
        with self._lock:
            return self._table(table).get_default()

    def table_entries(self, table: str) -> list[TableEntry]:
        """All entries of a table, in handle order."""
        with self._lock:
            return self._table(table).entries()

    def table_entry(self, table: str, handle: int) -> TableEntry:
        """One entry by handle."""
        with self._lock:
            return self._table(table).entry(handle)

    def table_find(self, table: str, matches: Sequence[Match],
                   priority: int | None = None) -> int | None:
        """Handle of the entry with this match key (and priority), or None."""
        with self._lock:
            return self._table(table).find(matches, priority)

    def table_clear(self, table: str) -> None:
        """Remove all entries of a table."""
        with self._lock:
            self._table(table).clear()

    # ---- replication ------------------------------------------------------

    def mc_group_set(self, group_id: int, replicas: Iterable[Replica]) -> None:
        """Create or replace a multicast group of (port, rid) replicas."""
        with self._lock:
            self._pre.group_set(group_id, replicas)

    def mc_group_delete(self, group_id: int) -> None:
        """Delete a multicast group."""
        with self._lock:
            self._pre.group_delete(group_id)

    def mc_groups(self) -> dict[int, list[Replica]]:
        """All multicast groups."""
        with self._lock:
            return self._pre.groups()

    def clone_session_set(self, session_id: int, port: int | None = None,
                          mc_group: int | None = None,
                          replicas: Iterable[Replica] | None = None) -> None:
        """Create or replace a clone session: copies go to ``port``, ``mc_group``'s
        replicas and/or ``replicas`` (which set egress_rid, as P4Runtime sessions do)."""
        with self._lock:
            self._pre.session_set(session_id, port, mc_group, replicas)

    def clone_session_delete(self, session_id: int) -> None:
        """Delete a clone session."""
        with self._lock:
            self._pre.session_delete(session_id)

    def clone_sessions(self) -> dict[int, CloneSession]:
        """All clone sessions."""
        with self._lock:
            return self._pre.sessions()

    # ---- counters ---------------------------------------------------------

    def _counter(self, name: str) -> tuple[list[int], list[int]]:
        c = self._loaded()[1].counters.get(name)
        if c is None:
            raise UnknownNameError(f"no indirect counter '{name}' in the program")
        return c

    @staticmethod
    def _index(name: str, index: int, size: int) -> int:
        if not isinstance(index, int) or not 0 <= index < size:
            raise InvalidEntryError(f"index {index!r} out of range 0..{size - 1} for '{name}'")
        return index

    def counter_read(self, name: str, index: int) -> tuple[int, int]:
        """(packets, bytes) of one counter cell."""
        with self._lock:
            cp, cb = self._counter(name)
            i = self._index(name, index, len(cp))
            return cp[i], cb[i]

    def counter_write(self, name: str, index: int, packets: int, nbytes: int) -> None:
        """Set one counter cell."""
        with self._lock:
            cp, cb = self._counter(name)
            i = self._index(name, index, len(cp))
            cp[i], cb[i] = int(packets), int(nbytes)

    def counter_reset(self, name: str) -> None:
        """Zero every cell of a counter array."""
        with self._lock:
            cp, cb = self._counter(name)
            cp[:] = [0] * len(cp)
            cb[:] = [0] * len(cb)

    def direct_counter_read(self, table: str, handle: int) -> tuple[int, int]:
        """(packets, bytes) counted for an entry of a table with direct counters."""
        with self._lock:
            e = self._direct(table).entry(handle)
            return e.packets, e.bytes

    def direct_counter_write(self, table: str, handle: int, packets: int, nbytes: int) -> None:
        """Set the direct counter of an entry."""
        with self._lock:
            self._direct(table).set_entry_counters(handle, int(packets), int(nbytes))

    def direct_counter_reset(self, table: str) -> None:
        """Zero the direct counters of every entry of a table."""
        with self._lock:
            self._direct(table).reset_entry_counters()

    def _direct(self, table: str) -> Table:
        t = self._table(table)
        if not t.with_counters:
            raise UnknownNameError(f"table '{table}' has no direct counter")
        return t

    # ---- registers (in-process debugging; P4Runtime has no register access on bmv2) ----

    def _register(self, name: str) -> tuple[list[int] | RegisterArray, int]:
        prog, code, _engine = self._loaded()
        r = code.registers.get(name)
        if r is None:
            raise UnknownNameError(f"no register array '{name}' in the program")
        if isinstance(r, RegisterArray):
            return r, r.width
        return r, prog.registers[name].bitwidth

    @staticmethod
    def _cells(r: list[int] | RegisterArray) -> int:
        return r.size if isinstance(r, RegisterArray) else len(r)

    def register_read(self, name: str, index: int) -> int:
        """One register cell (a TNA pair: its fields concatenated, the first high)."""
        with self._lock:
            r, _w = self._register(name)
            i = self._index(name, index, self._cells(r))
            return r.read_int(i) if isinstance(r, RegisterArray) else r[i]

    def register_read_all(self, name: str) -> list[int]:
        """A copy of a whole register array."""
        with self._lock:
            r, _w = self._register(name)
            if isinstance(r, RegisterArray):
                return [r.read_int(i) for i in range(r.size)]
            return list(r)

    def register_write(self, name: str, index: int, value: int) -> None:
        """Set one register cell."""
        with self._lock:
            r, width = self._register(name)
            i = self._index(name, index, self._cells(r))
            if not isinstance(value, int) or value < 0 or value >> width:
                raise InvalidEntryError(f"value {value!r} does not fit register '{name}' "
                                        f"(bit<{width}>)")
            if isinstance(r, RegisterArray):
                r.write_int(i, value)
            else:
                r[i] = value

    def register_reset(self, name: str) -> None:
        """Zero a register array (a TNA array: back to its initial value)."""
        with self._lock:
            r, _w = self._register(name)
            if isinstance(r, RegisterArray):
                r.reset()
            else:
                r[:] = [0] * len(r)
