"""CounterEntry writes and reads (indirect counters), as p4lang/PI does them.

A write sets the units the counter counts (the other value is kept, as bmv2's
PI target does); DELETE zeroes it; reads report packets and bytes, as bmv2
always does. Without an index, a read returns every index of the counter, and
counter_id 0 reads every indirect counter.
"""

from __future__ import annotations

from dataclasses import dataclass

from bmv2.pyswitch.p4runtime.dataplane import Dataplane
from bmv2.pyswitch.p4runtime.p4info import CounterInfo, CounterUnit, P4InfoIndex
from bmv2.pyswitch.p4runtime.proto import p4runtime_pb2
from bmv2.pyswitch.p4runtime.status import (
    TargetError,
    check_update_type,
    invalid_argument,
    unimplemented,
)

Update = p4runtime_pb2.Update


def _check_index(entry: p4runtime_pb2.CounterEntry) -> None:
    if entry.index.index < 0:
        raise invalid_argument("A negative number is not a valid index value")


@dataclass
class CounterOps:
    """The indirect counters of one pipeline."""

    index: P4InfoIndex
    dataplane: Dataplane

    def write(self, update_type: int, entry: p4runtime_pb2.CounterEntry) -> None:
        """Set (MODIFY) or zero (DELETE) one counter cell."""
        counter = self.index.counter(entry.counter_id)
        if not entry.HasField("index"):
            raise unimplemented("Wildcard write is not supported for indirect counters yet")
        _check_index(entry)
        check_update_type(update_type)
        if update_type == Update.INSERT:
            raise invalid_argument("INSERT update type not supported for counters")
        try:
            with self.dataplane.control() as switch:
                packets, octets = 0, 0
                if update_type == Update.MODIFY:
                    packets, octets = switch.counter_read(counter.name, entry.index.index)
                    if counter.unit != CounterUnit.BYTES:
                        packets = entry.data.packet_count
                    if counter.unit != CounterUnit.PACKETS:
                        octets = entry.data.byte_count
                switch.counter_write(counter.name, entry.index.index, packets, octets)
        except TargetError as exc:
            raise exc.as_p4runtime("Error when writing to counter") from exc

    def read(self, entry: p4runtime_pb2.CounterEntry) -> list[p4runtime_pb2.Entity]:
        """The counter cells a CounterEntry read selects."""
        if entry.counter_id == 0:
            counters = list(self.index.counters.values())
        else:
            counters = [self.index.counter(entry.counter_id)]
        out: list[p4runtime_pb2.Entity] = []
        for counter in counters:
            out.extend(self._read_counter(counter, entry))
        return out

    def _read_counter(
        self, counter: CounterInfo, entry: p4runtime_pb2.CounterEntry
    ) -> list[p4runtime_pb2.Entity]:
        if entry.HasField("index"):
            _check_index(entry)
            indices = [entry.index.index]
        else:
            indices = list(range(counter.size))
        out = []
        try:
            with self.dataplane.control() as switch:
                for i in indices:
                    packets, octets = switch.counter_read(counter.name, i)
                    cell = p4runtime_pb2.CounterEntry(
                        counter_id=counter.id,
                        index=p4runtime_pb2.Index(index=i),
                        data=p4runtime_pb2.CounterData(packet_count=packets, byte_count=octets),
                    )
                    out.append(p4runtime_pb2.Entity(counter_entry=cell))
        except TargetError as exc:
            raise exc.as_p4runtime("Error when reading counter from target") from exc
        return out
