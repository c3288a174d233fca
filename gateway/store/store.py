"""The store: the current fleet as immutable snapshots, and change notifications.

Sources write (replace the whole set, or upsert / delete one object); queries read
:attr:`Store.snapshot` (:mod:`gateway.store.snapshot`), which is swapped
atomically, so a query that holds a snapshot sees one consistent fleet however
the store changes meanwhile.

A watch event's object is parsed once per resourceVersion. A relist reads again
even an object whose resourceVersion the store holds (the API server may read it
otherwise now), cheaply, against its record, and keeps the record where nothing
differs. A change of one object copies a shard of the map by name, not the whole
fleet (:mod:`gateway.store.shards`).
What questions make of the whole fleet (ledgers of fleet totals, filters'
selections, the consumer index) the store's :attr:`Store.views` keep and carry to
each new snapshot by the change that made it (:mod:`gateway.store.views`), so
that under churn a question reads instead of recounting every host.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import json
import logging
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import msgspec

from gateway.domain.bounded import Memos
from gateway.domain.parse import ParseError, parse_hypervisor
from gateway.domain.records import Hypervisor
from gateway.store.carried import Step
from gateway.store.collector import Spacing, collector_paused, freeze, settle
from gateway.store.evictions import EvictionStore
from gateway.store.listeners import Listeners
from gateway.store.shards import ShardedMap
from gateway.store.snapshot import Change, ChangeType, Snapshot
from gateway.store.views import Views

__all__ = ["Batch", "Store"]

log = logging.getLogger(__name__)


def _step(changes: list[Change], size: int) -> Step | None:
    """The records a change set removes and adds; None when making views of a fleet of
    ``size`` afresh costs less than carrying them through it (and is then what happens)."""
    if 2 * len(changes) > max(size, _RECOUNT_ABOVE):
        return None
    removed = [c.previous for c in changes if c.previous is not None]
    added = [c.hypervisor for c in changes if c.type is not ChangeType.DELETED]
    return removed, added


Listener = Callable[[Snapshot, list[Change]], None]


#: Changes above which (and above half the fleet) views are made afresh.
_RECOUNT_ABOVE = 256
#: Changed records after which the store takes the fleet out of the cyclic collector.
#: Often: a settle walks what was made since the last one (the changes' records and
#: snapshots, and the views, answers and messages made of them), a pause of every
#: answer that grows with the interval. At 20,000 hosts and 333 changes a second: 2.5
#: ms every 100 changes (4,500 objects), 0.7 ms every 25 (2,100), and 15% more
#: collecting in all.
_SETTLE_AFTER = 25
#: Changed records after which a settle collects the whole heap, frozen objects too, at
#: the least; or the fleet's size, when more: a pause that grows with the fleet (0.14 s
#: at 20,000 hosts in process, 0.36 s on a busy machine), and that frees what requests
#: in flight at the settles before left behind.
_THOROUGH_AFTER = 1000
#: And no sooner than this many times its last pause after it: a thousandth of the time
#: at most. At 333 changes a second and 20,000 hosts, the fleet's size in changes came
#: once a minute, and the pause then made the p99 of every answer in that minute.
_THOROUGH_SPACING = 1000


@dataclasses.dataclass(slots=True)
class Batch:
    """A parsed set of objects, ready to :meth:`Store.commit`."""

    hypervisors: dict[str, Hypervisor]
    rejected: dict[str, str]
    fingerprints: dict[str, str]

    def absorb(self, part: Batch) -> None:
        """Add a part prepared separately (one page of a LIST) to this set."""
        self.hypervisors.update(part.hypervisors)
        self.rejected.update(part.rejected)
        self.fingerprints.update(part.fingerprints)


def _fingerprint(obj: Any) -> str:
    try:
        text = json.dumps(obj, sort_keys=True, separators=(",", ":"), default=_spelled)
    except (TypeError, ValueError):
        text = repr(obj)
    return hashlib.blake2b(text.encode(), digest_size=16).hexdigest()


def _same(record: Hypervisor, previous: Hypervisor) -> bool:
    """Whether ``record``, read against ``previous``, holds exactly what that holds.

    Mostly identity checks: a part spelled as in ``previous`` is its very object, and
    one spelled otherwise differs in the spellings compared, even where ``==`` finds
    its values equal (a quantity 8 and 8.0). The other fields are strings, numbers and
    flags, and what the parts make (resources, drift): the same of the same parts.
    """
    return msgspec.structs.astuple(record) == msgspec.structs.astuple(previous)


def _spelled(value: Any) -> str:
    """What JSON cannot spell, as a string; a part a source left JSON, as its text."""
    return bytes(value).decode() if isinstance(value, msgspec.Raw) else str(value)


class Store:
    """Holds the current :class:`Snapshot` and tells listeners about every change.

    Its methods are synchronous. Those that change it are meant to be called from
    the event loop's thread, so each change is atomic for every reader on that
    loop; :meth:`prepare` (parsing, which touches nothing) runs in worker threads
    too, as do questions to its :attr:`views`.
    """

    def __init__(
        self, views: Views | None = None, *, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._snapshot = Snapshot(0, ShardedMap(), None)
        self._listeners: Listeners[Snapshot, list[Change]] = Listeners("store")
        #: What questions make of its snapshots' fleets, kept and carried per change.
        self.views = Views() if views is None else views
        #: Every memo of what is made of its records, for /metrics: its views, and
        #: what the app that serves it adds (the answers' memos, the parse memos).
        self.memos = Memos()
        self.memos.add(self.views)
        self.views.published(self._snapshot, None)
        self.ready = False
        #: The source's latest position; bookmarks advance it without a new snapshot.
        self.resource_version: str | None = None
        #: Objects the domain could not represent: name (or position) -> reason.
        self.rejected: dict[str, str] = {}
        # Records created since the last settle, and since the last thorough one
        # (gateway.store.collector); None before the first settle.
        self._unsettled = 0
        self._uncollected: int | None = None
        # When the next thorough settle may come (see _THOROUGH_SPACING).
        self._thorough = Spacing(_THOROUGH_SPACING, clock)
        # Content fingerprints of the objects that have no resourceVersion.
        self._fingerprints: dict[str, str] = {}
        #: The operator's evictions of these hosts: a small store of their own, fed
        #: beside the fleet by the same source (gateway.store.evictions).
        self.evictions = EvictionStore()

    @property
    def snapshot(self) -> Snapshot:
        return self._snapshot

    def listen(self, listener: Listener) -> Callable[[], None]:
        """Call ``listener(snapshot, changes)`` after every change; returns an unsubscribe."""
        return self._listeners.add(listener)

    def mark_ready(self) -> None:
        """The source has delivered a complete first view of the fleet."""
        self.ready = True

    def clear(self) -> None:
        """The source serves no fleet any more (its CRD is gone): every object is
        deleted, and the store is not ready until a complete view comes again."""
        self.replace([])
        self.ready = False

    def replace(
        self,
        objects: Iterable[Any],
        resource_version: str | None = None,
        *,
        versioned: bool = True,
    ) -> None:
        """Swap in a complete new set of objects (a relist or a reload).

        Objects missing from the new set are deleted; an object that did not change
        keeps its record and causes no change event. One whose resourceVersion did not
        change is read again all the same, cheaply, as the API server may read it
        otherwise now (see :meth:`_parse`); one without a resourceVersion is compared
        by its content. ``versioned=False`` says the objects do not come
        from the API server: a resourceVersion they carry is a copy (a file saved
        with ``kubectl get -o yaml`` and then edited), so their content decides.
        """
        self.commit(self.prepare(objects, versioned=versioned), resource_version)

    async def replace_async(
        self, objects: Iterable[Any], resource_version: str | None = None
    ) -> None:
        """:meth:`replace`, parsing in a worker thread: the event loop keeps serving."""
        self.commit(await asyncio.to_thread(self.prepare, objects), resource_version)

    def prepare(self, objects: Iterable[Any], start: int = 0, *, versioned: bool = True) -> Batch:
        """Parse a complete set of objects (or a part of it) without touching the store.

        Safe to run in a worker thread, so that a large relist does not stall the
        event loop; :meth:`commit` then applies the result on the loop. Parts
        (pages, numbered from ``start``) are joined with :meth:`Batch.absorb`.
        """
        old = self._snapshot.by_name
        prepared = Batch({}, {}, {})
        with collector_paused():
            for position, obj in enumerate(objects, start):
                hypervisor = self._parse(
                    obj, old, prepared, f"#{position}", versioned=versioned, relist=True
                )
                if hypervisor is not None:
                    prepared.hypervisors[hypervisor.name] = hypervisor
        return prepared

    def commit(self, prepared: Batch, resource_version: str | None = None) -> None:
        """Make a prepared set the store's content, with the change events it implies."""
        old = self._snapshot.by_name
        new = prepared.hypervisors
        self.rejected = prepared.rejected
        self._fingerprints = prepared.fingerprints
        changes = [Change(ChangeType.DELETED, h, h) for name, h in old.items() if name not in new]
        for name, hypervisor in new.items():
            previous = old.get(name)
            if previous is None:
                changes.append(Change(ChangeType.ADDED, hypervisor, None))
            elif previous is not hypervisor:
                changes.append(Change(ChangeType.MODIFIED, hypervisor, previous))
        self._commit(ShardedMap(new), changes, resource_version)

    def upsert(self, obj: Any, resource_version: str | None = None) -> None:
        """Add or update one object (a watch event)."""
        old = self._snapshot.by_name
        prepared = Batch({}, self.rejected, self._fingerprints)
        hypervisor = self._parse(obj, old, prepared, "?", versioned=True, relist=False)
        if hypervisor is None:
            self._commit(old, [], resource_version)
            return
        self.rejected.pop(hypervisor.name, None)
        previous = old.get(hypervisor.name)
        if previous is hypervisor:
            self._commit(old, [], resource_version)
            return
        kind = ChangeType.ADDED if previous is None else ChangeType.MODIFIED
        new = old.set(hypervisor.name, hypervisor)
        self._commit(new, [Change(kind, hypervisor, previous)], resource_version)

    def delete(self, name: str, resource_version: str | None = None) -> None:
        """Remove one object by name (a watch event)."""
        old = self._snapshot.by_name
        self.rejected.pop(name, None)
        previous = old.get(name)
        if previous is None:
            self._commit(old, [], resource_version)
            return
        new = old.delete(name)
        self._commit(new, [Change(ChangeType.DELETED, previous, previous)], resource_version)

    def advance(self, resource_version: str) -> None:
        """Record a newer source position with no change to the fleet (a bookmark)."""
        self._commit(self._snapshot.by_name, [], resource_version)

    def _parse(
        self,
        obj: Any,
        old: Mapping[str, Hypervisor],
        prepared: Batch,
        where: str,
        *,
        versioned: bool,
        relist: bool,
    ) -> Hypervisor | None:
        """``relist``: ``obj`` is of a complete set, not a watch event."""
        meta = obj.get("metadata") if isinstance(obj, Mapping) else None
        name = meta.get("name") if isinstance(meta, Mapping) else None
        version = meta.get("resourceVersion") if isinstance(meta, Mapping) else None
        previous = old.get(name) if isinstance(name, str) else None
        # The record this object is, if reading it again finds nothing different.
        unchanged: Hypervisor | None = None
        if (version is None or not versioned) and isinstance(name, str):
            # Only the API server's resourceVersions change with every write:
            # without one, the content stands in.
            fingerprint = _fingerprint(obj)
            if previous is not None and self._fingerprints.get(name) == fingerprint:
                prepared.fingerprints[name] = fingerprint
                return previous
            prepared.fingerprints[name] = fingerprint
        elif previous is not None and previous.resource_version == version:
            if not relist:
                return previous
            # The API server prunes and defaults an object as it reads it from etcd,
            # under the CRD's current schema: after the CRD changed (spec.bookings
            # rolled back), the same resourceVersion lists other content until the
            # object is next written, and only a relist reads it anew.
            unchanged = previous
        try:
            # Files are YAML: its spelling in JSON is not the whole story
            # (gateway.domain.spellings).
            hypervisor = parse_hypervisor(obj, previous if versioned else None)
        except ParseError as error:
            key = name if isinstance(name, str) and name else where
            prepared.rejected[key] = str(error)
            log.warning("skipping Hypervisor object %s: %s", key, error)
            return None
        # The record itself where nothing differs: no change event, and what was made
        # of it (views, answers) stays valid.
        return unchanged if unchanged is not None and _same(hypervisor, unchanged) else hypervisor

    def _commit(
        self, hypervisors: ShardedMap[Hypervisor], changes: list[Change], rv: str | None
    ) -> None:
        if rv is not None:
            self.resource_version = rv
        if not changes:
            return
        old = self._snapshot
        same_hosts = all(c.type is ChangeType.MODIFIED for c in changes)
        new = Snapshot(
            old.generation + 1, hypervisors, self.resource_version, old if same_hosts else None
        )
        self.views.published(new, _step(changes, len(hypervisors)))
        self._snapshot = new
        # Freeze the fleet's records after a whole new set, and again once enough
        # single changes have made new ones (see collector.settle for why).
        self._unsettled += len(changes)
        if self._uncollected is not None:
            self._uncollected += len(changes)
        if self._unsettled >= _SETTLE_AFTER:
            self._unsettled = 0
            if self._uncollected is None:
                # The first settle (the initial state's, mostly) has no frozen cycles
                # to hand back, and loading leaves no cyclic garbage: any collection
                # would walk the fleet for nothing (a whole-heap one 48-73 ms of a
                # start at 1,000 hosts, a young one 7-9 ms).
                freeze()
                self._uncollected = 0
            elif self._uncollected >= max(_THOROUGH_AFTER, len(hypervisors)) and (
                self._thorough.due()
            ):
                with self._thorough.spaced():
                    settle(thorough=True)
                self._uncollected = 0
            else:
                settle(thorough=False)
        self._listeners.tell(new, changes)
