"""Which hosts each consumer is booked on, kept per change instead of found again per question.

``consumer(uuid:)``, ``hypervisors(filter: {consumer:})`` and ``consumers``
look a consumer up by UUID. Indexing every booking of the fleet for them takes
seconds at 20,000 hosts with 40 bookings each, and under churn every change
makes a new snapshot: seconds per question, on the event loop. A
consumer's hosts change only where a host's bookings do, so the index is
carried from snapshot to snapshot by the store's views (:class:`ConsumerIndex`), built
the first time a question asks, not before: a store nobody asks about
consumers pays nothing.

The index names hosts, not bookings. The bookings are read from the snapshot's
records when a question asks (:class:`Consumers`): a status patch parses new
booking records equal to the old, and an index of bookings would either copy
its shards for every patch to refer to the new ones, or keep the old ones
alive, a second copy of every booking within a minute of node-agent patches.
Hosts change only when a consumer comes, goes or moves, so a status patch, or
a resize, leaves the index as it was: the same object.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from operator import attrgetter

from gateway.domain.records import ConsumerBooking, Hypervisor
from gateway.store.shards import ShardedMap
from gateway.store.sortedkeys import SortedKeys

__all__ = ["REORDER_ABOVE", "SHARDS", "ConsumerIndex", "Consumers"]

#: A 20,000-host fleet with 40 bookings each has 800,000 consumers: about 800 per shard,
#: so that a change copies about as many entries as the tuple of shards has.
SHARDS = 1024
#: What the index takes per consumer: about 35 bytes while it shares the UUID strings
#: of the records, up to 120 once patches have replaced every record.
BYTES_PER_CONSUMER = 120
#: Shards changed since the UUIDs were last put in order beyond which finding the order
#: again from the changes is a pass too long for the event loop (see
#: :meth:`ConsumerIndex.ordered`).
REORDER_ABOVE = SHARDS // 8

#: The hosts of one consumer, in name order: just the name while it is booked on one.
Hosts = str | tuple[str, ...]


class _Order:
    """The UUIDs of one index and of every index carried from it, as last put in order:
    (the map they are the keys of, the keys in order). Shared by those indexes, so
    that the UUIDs, once sorted, are found again from the changes since."""

    __slots__ = ("last",)

    def __init__(self) -> None:
        self.last: tuple[ShardedMap[Hosts], SortedKeys] | None = None


class ConsumerIndex:
    """Consumer UUID -> the hosts it is booked on."""

    __slots__ = ("_hosts", "_order")

    def __init__(self, hosts: ShardedMap[Hosts], order: _Order) -> None:
        self._hosts = hosts
        self._order = order

    @classmethod
    def of(cls, hypervisors: Iterable[Hypervisor]) -> ConsumerIndex:
        """Indexed from every host, in name order (so each consumer's hosts are)."""
        hosts: dict[str, Hosts] = {}
        for hypervisor in hypervisors:
            name = hypervisor.name
            for booking in hypervisor.consumers:
                known = hosts.get(booking.uuid)
                if known is None:
                    hosts[booking.uuid] = name
                elif _names(known)[-1] != name:  # a second booking here adds no host
                    hosts[booking.uuid] = (*_names(known), name)
        return cls(ShardedMap(hosts, shards=SHARDS), _Order())

    def apply(self, removed: Iterable[Hypervisor], added: Iterable[Hypervisor]) -> ConsumerIndex:
        """The index after a change: its previous records out, its new ones in. Only
        consumers a host gained or lost are touched; without any, this very index."""
        before = {h.name: _uuids(h) for h in removed}
        after = {h.name: _uuids(h) for h in added}
        moves: dict[str, list[tuple[str, bool]]] = {}
        for name in before.keys() | after.keys():
            old, new = before.get(name, frozenset()), after.get(name, frozenset())
            if old == new:
                continue
            for uuid in old - new:
                moves.setdefault(uuid, []).append((name, False))
            for uuid in new - old:
                moves.setdefault(uuid, []).append((name, True))
        if not moves:
            return self
        values: dict[str, Hosts] = {}
        for uuid, changes in moves.items():
            names = set(self.hosts(uuid))
            for name, booked in changes:
                if booked:
                    names.add(name)
                else:
                    names.discard(name)
            if names:
                ordered = sorted(names)
                values[uuid] = ordered[0] if len(ordered) == 1 else tuple(ordered)
        deleted = moves.keys() - values.keys()
        return ConsumerIndex(self._hosts.changed(values, deleted), self._order)

    def nbytes(self) -> int:
        """What it takes, estimated: :data:`BYTES_PER_CONSUMER` per consumer."""
        return BYTES_PER_CONSUMER * len(self._hosts)

    def hosts(self, uuid: str) -> tuple[str, ...]:
        """The names of the hosts ``uuid`` (lower case) is booked on, in name order."""
        found = self._hosts.get(uuid)
        return () if found is None else _names(found)

    def __len__(self) -> int:
        return len(self._hosts)

    def ordered(self) -> bool:
        """Whether :meth:`order` is at hand: found from an order of few changes ago."""
        last = self._order.last
        return last is not None and len(_changed(last[0], self._hosts)) <= REORDER_ABOVE

    def order(self) -> SortedKeys:
        """The consumers' UUIDs in order: the last order found (by any index carried
        from the same first one) and the changes since, or sorted from scratch."""
        last = self._order.last
        if last is None:
            keys = SortedKeys(self._hosts)
        elif last[0] is self._hosts:
            return last[1]
        else:
            then, keys = last
            added: list[str] = []
            removed: list[str] = []
            for old, new in _changed(then, self._hosts):
                added += new.keys() - old.keys()
                removed += old.keys() - new.keys()
            keys = keys.changed(added, removed)
        self._order.last = (self._hosts, keys)
        return keys


def _changed(
    old: ShardedMap[Hosts], new: ShardedMap[Hosts]
) -> list[tuple[Mapping[str, Hosts], Mapping[str, Hosts]]]:
    """The shards that differ between two versions of one index's map."""
    return [(a, b) for a, b in zip(old.shards(), new.shards(), strict=True) if a is not b]


def _names(hosts: Hosts) -> tuple[str, ...]:
    return (hosts,) if isinstance(hosts, str) else hosts


def _uuids(hypervisor: Hypervisor) -> frozenset[str]:
    return frozenset(b.uuid for b in hypervisor.consumers)


_HOST = attrgetter("hypervisor")


class Consumers(Mapping[str, tuple[ConsumerBooking, ...]]):
    """Consumer UUID (lower case) -> its bookings, on every host it is booked on, in
    host name order; iterated in UUID order. Read from one snapshot's records."""

    __slots__ = ("_hypervisors", "index")

    def __init__(self, index: ConsumerIndex, hypervisors: Mapping[str, Hypervisor]) -> None:
        self.index = index
        self._hypervisors = hypervisors

    def hosts(self, uuid: str) -> tuple[str, ...]:
        """The names of the hosts ``uuid`` (lower case) is booked on, in name order."""
        return self.index.hosts(uuid)

    def __getitem__(self, uuid: str) -> tuple[ConsumerBooking, ...]:
        bookings = tuple(
            b
            for name in self.index.hosts(uuid)
            for b in self._hypervisors[name].consumers
            if b.uuid == uuid
        )
        if not bookings:
            raise KeyError(uuid)
        return bookings

    def __contains__(self, uuid: object) -> bool:
        return isinstance(uuid, str) and bool(self.index.hosts(uuid))

    def __len__(self) -> int:
        return len(self.index)

    def __iter__(self) -> Iterator[str]:
        return iter(self.uuids)

    @property
    def uuids(self) -> Sequence[str]:
        """Every consumer's UUID, in order."""
        return self.index.order()

    def each(self) -> Iterator[tuple[str, tuple[ConsumerBooking, ...]]]:
        """Every consumer with its bookings, in UUID order: one pass over every booking
        (looking each consumer up would read its hosts' bookings once per consumer)."""
        found: dict[str, list[ConsumerBooking]] = {}
        for hypervisor in self._hypervisors.values():
            for booking in hypervisor.consumers:
                found.setdefault(booking.uuid, []).append(booking)
        for uuid in self.uuids:
            bookings = found[uuid]
            # Hosts come in shard order: put a migrating consumer's in name order.
            yield uuid, tuple(bookings if len(bookings) == 1 else sorted(bookings, key=_HOST))
