"""The store: consistent snapshots, generations, indexes, change notifications."""

from __future__ import annotations

import copy
import logging
from collections.abc import Callable
from typing import Any

import msgspec
import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from gateway.sources.kubernetes import decoding
from gateway.store import store as store_module
from gateway.store.snapshot import Change, ChangeType, Snapshot
from gateway.store.store import Store
from tests.objects import consumer, hypervisor, uuid_of


def host(
    name: str,
    version: str,
    *,
    cpu: int = 8,
    zone: str | None = None,
    bookings: list[dict[str, Any]] | None = None,
    aggregates: list[str] | None = None,
    traits: list[str] | None = None,
) -> dict[str, Any]:
    spec: dict[str, Any] = {"aggregates": aggregates or [], "customTraits": traits or []}
    if bookings is not None:
        spec["bookings"] = bookings
    return hypervisor(
        name,
        labels={"topology.kubernetes.io/zone": zone} if zone else {},
        spec=spec,
        status={"capacity": {"cpu": cpu}},
        resource_version=version,
    )


class Recorder:
    """A listener that keeps every notification."""

    def __init__(self) -> None:
        self.calls: list[tuple[Snapshot, list[Change]]] = []

    def __call__(self, snapshot: Snapshot, changes: list[Change]) -> None:
        self.calls.append((snapshot, changes))

    def kinds(self) -> list[list[tuple[ChangeType, str]]]:
        return [[(c.type, c.hypervisor.name) for c in changes] for _, changes in self.calls]


@pytest.fixture
def store() -> Store:
    return Store()


@pytest.fixture
def recorder(store: Store) -> Recorder:
    listener = Recorder()
    store.listen(listener)
    return listener


def test_empty_store(store: Store) -> None:
    assert store.snapshot.generation == 0
    assert len(store.snapshot) == 0
    assert list(store.snapshot.ordered) == []
    assert store.views.consumers(store.snapshot) == {}
    assert store.resource_version is None
    assert not store.ready
    store.mark_ready()
    assert store.ready


def test_upsert_adds_then_modifies(store: Store, recorder: Recorder) -> None:
    store.upsert(host("a", "1"), resource_version="1")
    first = store.snapshot.by_name["a"]
    assert store.snapshot.generation == 1
    assert store.snapshot.resource_version == "1"
    store.upsert(host("a", "2", cpu=16), resource_version="2")
    second = store.snapshot.by_name["a"]
    assert second.resources["cpu"].physical == 16
    assert store.snapshot.generation == 2
    assert recorder.kinds() == [[(ChangeType.ADDED, "a")], [(ChangeType.MODIFIED, "a")]]
    (added,), (modified,) = (changes for _, changes in recorder.calls)
    assert added.previous is None
    assert (modified.hypervisor, modified.previous) == (second, first)
    assert recorder.calls[1][0] is store.snapshot


def test_upsert_of_the_same_version_keeps_the_record(store: Store, recorder: Recorder) -> None:
    store.upsert(host("a", "1"))
    record, snapshot = store.snapshot.by_name["a"], store.snapshot
    store.upsert(host("a", "1"), resource_version="9")
    assert store.snapshot is snapshot
    assert store.snapshot.by_name["a"] is record
    assert store.resource_version == "9"
    assert len(recorder.calls) == 1


def test_delete(store: Store, recorder: Recorder) -> None:
    store.upsert(host("a", "1"))
    store.upsert(host("b", "2"))
    record = store.snapshot.by_name["a"]
    store.delete("a", resource_version="3")
    assert list(store.snapshot.by_name) == ["b"]
    assert store.snapshot.generation == 3
    (change,) = recorder.calls[-1][1]
    assert (change.type, change.hypervisor, change.previous) == (ChangeType.DELETED, record, record)
    store.delete("a")  # already gone
    store.delete("never-there", resource_version="4")
    assert store.snapshot.generation == 3
    assert store.resource_version == "4"
    assert len(recorder.calls) == 3


def test_a_cleared_store_has_deleted_every_host_and_is_not_ready(
    store: Store, recorder: Recorder
) -> None:
    store.replace([host("a", "1"), host("b", "2")])
    store.mark_ready()
    store.clear()
    assert (len(store.snapshot), store.ready) == (0, False)
    assert sorted(recorder.kinds()[-1]) == [(ChangeType.DELETED, "a"), (ChangeType.DELETED, "b")]


def test_bookmarks_advance_the_position_but_not_the_generation(
    store: Store, recorder: Recorder
) -> None:
    store.upsert(host("a", "1"), resource_version="1")
    snapshot = store.snapshot
    store.advance("7")
    assert store.resource_version == "7"
    assert store.snapshot is snapshot
    assert store.snapshot.generation == 1
    assert len(recorder.calls) == 1
    store.upsert(host("b", "8"))  # the next change carries the newest position
    assert store.snapshot.resource_version == "7"


def test_replace(store: Store, recorder: Recorder) -> None:
    store.replace([host("a", "1"), host("b", "2"), host("c", "3")], resource_version="3")
    a, b = store.snapshot.by_name["a"], store.snapshot.by_name["b"]
    store.replace([host("b", "2"), host("a", "4", cpu=2), host("d", "5")], resource_version="5")
    snapshot = store.snapshot
    assert sorted(snapshot.by_name) == ["a", "b", "d"]
    assert snapshot.by_name["b"] is b  # unchanged: read again, its record kept
    assert snapshot.by_name["a"] is not a
    assert snapshot.by_name["a"].resources["cpu"].physical == 2
    assert (snapshot.generation, snapshot.resource_version) == (2, "5")
    assert recorder.kinds()[1] == [
        (ChangeType.DELETED, "c"),
        (ChangeType.MODIFIED, "a"),
        (ChangeType.ADDED, "d"),
    ]
    modified = recorder.calls[1][1][1]
    assert modified.previous is a


def test_an_identical_replace_changes_nothing(store: Store, recorder: Recorder) -> None:
    store.replace([host("a", "1"), host("b", "2")])
    snapshot = store.snapshot
    store.replace([host("b", "2"), host("a", "1")], resource_version="10")
    assert store.snapshot is snapshot
    assert store.resource_version == "10"
    assert len(recorder.calls) == 1


def streamed(obj: dict[str, Any]) -> Any:
    """``obj`` as the informer reads a stream's: its parts left JSON."""
    return decoding.hypervisor(msgspec.Raw(msgspec.json.encode(obj)))


@pytest.mark.parametrize("read", [copy.deepcopy, streamed], ids=["decoded", "streamed"])
def test_a_relist_reads_an_unchanged_version_again(
    store: Store, recorder: Recorder, read: Callable[[dict[str, Any]], Any]
) -> None:
    """The API server prunes an object as it reads it, under the CRD's current schema:
    rolled back to a CRD without spec.bookings, it lists the same version without them."""
    booked = [consumer(uuid_of(1), {"cpu": 1})]
    a, b = host("a", "1", bookings=booked), host("b", "2", bookings=booked)
    store.replace([read(a), read(b)])
    records, snapshot = dict(store.snapshot.by_name), store.snapshot
    store.replace([read(a), read(b)])
    assert store.snapshot is snapshot
    assert all(store.snapshot.by_name[name] is record for name, record in records.items())
    del a["spec"]["bookings"]
    store.replace([read(a), read(b)])
    (change,) = recorder.calls[-1][1]
    assert (change.type, change.previous) == (ChangeType.MODIFIED, records["a"])
    pruned = store.snapshot.by_name["a"]
    assert (pruned.resource_version, pruned.bookings_tracked, pruned.consumers) == ("1", False, ())
    assert pruned.resources["cpu"].booked is None
    assert store.snapshot.by_name["b"] is records["b"]


def test_replace_with_nothing_deletes_everything(store: Store, recorder: Recorder) -> None:
    store.replace([host("a", "1"), host("b", "2")])
    store.replace([])
    assert len(store.snapshot) == 0
    assert sorted(recorder.kinds()[1]) == [(ChangeType.DELETED, "a"), (ChangeType.DELETED, "b")]


def test_objects_without_version_are_compared_by_content(store: Store) -> None:
    """Files carry no resourceVersion: an unchanged object must not read as MODIFIED."""
    obj = host("a", "1")
    del obj["metadata"]["resourceVersion"]
    store.replace([obj])
    first, generation = store.snapshot.by_name["a"], store.snapshot.generation
    store.replace([copy.deepcopy(obj)])
    assert store.snapshot.by_name["a"] is first
    assert store.snapshot.generation == generation
    obj["metadata"]["labels"] = {"topology.kubernetes.io/zone": "z9"}
    store.upsert(obj)
    assert store.snapshot.by_name["a"] is not first
    assert store.snapshot.by_name["a"].zone == "z9"


def test_objects_from_elsewhere_are_compared_by_content_despite_a_version(store: Store) -> None:
    """Only the API server moves resourceVersion with every write; a file's is a copy."""
    store.replace([host("a", "5", cpu=8)], versioned=False)
    first = store.snapshot.by_name["a"]
    store.replace([host("a", "5", cpu=8)], versioned=False)
    assert store.snapshot.by_name["a"] is first
    store.replace([host("a", "5", cpu=16)], versioned=False)
    assert store.snapshot.by_name["a"].resources["cpu"].physical == 16
    store.upsert(host("a", "5", cpu=32))  # the API server's event of the same version: kept
    assert store.snapshot.by_name["a"].resources["cpu"].physical == 16


def test_the_api_servers_status_patch_keeps_the_bookings_a_files_edit_does_not(
    store: Store,
) -> None:
    """Only the API server's generation says the spec is the same (both objects here
    keep generation 1 and their uid)."""
    booked = [consumer(uuid_of(1), {"cpu": 1})]
    store.replace([host("a", "1", bookings=booked)])
    first = store.snapshot.by_name["a"]
    store.upsert(host("a", "2", cpu=16, bookings=booked))
    assert store.snapshot.by_name["a"].bookings is first.bookings
    store.replace([host("a", "3", bookings=booked)], versioned=False)
    edited = [consumer(uuid_of(2), {"cpu": 2})]
    store.replace([host("a", "3", bookings=edited)], versioned=False)
    assert [b.uuid for b in store.snapshot.by_name["a"].consumers] == [uuid_of(2)]


def test_a_snapshot_never_changes(store: Store) -> None:
    store.replace(
        [
            host("a", "1", zone="z1", bookings=[consumer(uuid_of(1), {"cpu": 1})]),
            host("b", "2", zone="z2", aggregates=["agg"], traits=["T"]),
        ]
    )
    old = store.snapshot
    records = dict(old.by_name)
    store.upsert(host("a", "3", zone="z3", bookings=[consumer(uuid_of(2), {"cpu": 1})]))
    store.delete("b")
    store.replace([host("c", "4", aggregates=["agg"], traits=["T"])])
    store.advance("99")
    # Read only now, after all changes (the indexes are built lazily).
    assert old.generation == 1
    assert old.by_name == records
    assert all(old.by_name[name] is record for name, record in records.items())
    assert [h.name for h in old.ordered] == ["a", "b"]
    assert list(store.views.consumers(old)) == [uuid_of(1)]
    assert {zone: [h.name for h in hs] for zone, hs in old.by_zone.items()} == {
        "z1": ["a"],
        "z2": ["b"],
    }
    assert [h.name for h in old.by_aggregate["agg"]] == ["b"]
    assert [h.name for h in old.by_trait["T"]] == ["b"]
    assert store.snapshot.generation == 4
    assert [h.name for h in store.snapshot.by_aggregate["agg"]] == ["c"]


# Indexes.


def test_the_consumers_count_a_live_migration_on_both_hosts(store: Store) -> None:
    migrating = uuid_of(1)
    store.replace(
        [
            host("target", "1", bookings=[consumer(migrating.upper(), {"cpu": 4})]),
            host(
                "source",
                "2",
                bookings=[consumer(migrating, {"cpu": 4}), consumer(uuid_of(2), {"cpu": 1})],
            ),
            host("twice", "3", bookings=[consumer(uuid_of(3), {"cpu": 1})] * 2),
            host("untracked", "4"),
        ]
    )
    index = store.views.consumers(store.snapshot)
    assert list(index) == sorted([migrating, uuid_of(2), uuid_of(3)])
    assert [b.hypervisor for b in index[migrating]] == ["source", "target"]
    assert [b.hypervisor for b in index[uuid_of(3)]] == ["twice", "twice"]
    by_name = store.snapshot.by_name
    assert by_name["source"].resources["cpu"].booked == 5
    assert by_name["target"].resources["cpu"].booked == 4


def test_by_zone_aggregate_and_trait(store: Store) -> None:
    store.replace(
        [
            host("c", "1", zone="z1", aggregates=["x", "y"], traits=["T1"]),
            host("a", "2", zone="z1", aggregates=["x"], traits=["T1", "T2"]),
            host("b", "3"),
        ]
    )
    obj = host("d", "4", zone="z2", traits=["T2"])
    obj["spec"]["groups"] = [{"aggregate": {"name": "x", "uuid": uuid_of(7)}}]
    obj["status"]["aggregates"] = [{"name": "x", "uuid": uuid_of(7)}]
    obj["status"]["traits"] = ["T2"]
    store.upsert(obj)

    def names(index: Any) -> dict[Any, list[str]]:
        return {key: [h.name for h in hosts] for key, hosts in index.items()}

    snapshot = store.snapshot
    assert names(snapshot.by_zone) == {"z1": ["a", "c"], None: ["b"], "z2": ["d"]}
    # An aggregate from several sources lists its host once.
    assert names(snapshot.by_aggregate) == {"x": ["a", "c", "d"], "y": ["c"], None: ["b"]}
    assert names(snapshot.by_trait) == {"T1": ["a", "c"], "T2": ["a", "d"]}


# Rejected objects and listeners.


def test_rejected_objects_are_recorded_and_cleared(store: Store) -> None:
    store.replace([host("a", "1"), {"metadata": {}}, "junk"])
    assert list(store.snapshot.by_name) == ["a"]
    assert store.rejected == {"#1": "metadata.name is missing", "#2": "expected an object, got str"}
    store.replace([host("a", "1")])
    assert store.rejected == {}
    store.upsert({"metadata": {"name": ""}})
    assert store.rejected == {"?": "metadata.name is missing"}
    assert store.snapshot.generation == 1


def test_a_failing_listener_breaks_nothing(
    store: Store, recorder: Recorder, caplog: pytest.LogCaptureFixture
) -> None:
    def failing(snapshot: Snapshot, changes: list[Change]) -> None:
        raise RuntimeError("listener bug")

    store.listen(failing)
    after = Recorder()
    store.listen(after)
    with caplog.at_level(logging.ERROR, logger="gateway.store.store"):
        store.upsert(host("a", "1"))
        store.upsert(host("b", "2"))
    assert sorted(store.snapshot.by_name) == ["a", "b"]
    assert len(recorder.calls) == len(after.calls) == 2
    assert sum("store listener failed" in r.message for r in caplog.records) == 2


def test_unsubscribe(store: Store) -> None:
    listener = Recorder()
    unsubscribe = store.listen(listener)
    store.upsert(host("a", "1"))
    unsubscribe()
    store.upsert(host("b", "2"))
    assert len(listener.calls) == 1


# Random sequences against a model.

NAMES = st.sampled_from(["a", "b", "c", "d"])


class StoreMachine(RuleBasedStateMachine):
    """Upserts, deletes, replaces and bookmarks; the store must match a plain dict.

    The model maps name -> (resourceVersion, cpu). A listener replays every change
    into its own dict, which must match too; and every snapshot ever taken must
    still show the fleet of its moment.
    """

    def __init__(self) -> None:
        super().__init__()
        self.store = Store()
        self.model: dict[str, tuple[str, int]] = {}
        self.replayed: dict[str, tuple[str | None, Any]] = {}
        self.history: list[tuple[Snapshot, dict[str, tuple[str, int]]]] = []
        self.version = 0
        self.generation = 0
        self.store.listen(self.replay)

    def replay(self, snapshot: Snapshot, changes: list[Change]) -> None:
        assert changes
        for change in changes:
            h = change.hypervisor
            if change.type is ChangeType.DELETED:
                assert self.replayed.pop(h.name)[0] == h.resource_version
            else:
                assert (change.type is ChangeType.ADDED) == (h.name not in self.replayed)
                if change.previous is not None:
                    assert change.previous.name == h.name
                self.replayed[h.name] = (h.resource_version, h.resources["cpu"].physical)

    def _object(self, name: str, cpu: int, keep: bool) -> dict[str, Any]:
        """The object for ``name``: its current version if ``keep``, else a new one."""
        if keep and name in self.model:
            version, cpu = self.model[name]
        else:
            self.version += 1
            version = str(self.version)
        self.model[name] = (version, cpu)
        return host(name, version, cpu=cpu)

    def _committed(self, before: dict[str, tuple[str, int]]) -> None:
        if self.model != before:
            self.generation += 1
        self.history.append((self.store.snapshot, dict(self.model)))

    @rule(name=NAMES, cpu=st.integers(1, 64), keep=st.booleans())
    def upsert(self, name: str, cpu: int, keep: bool) -> None:
        before = dict(self.model)
        self.store.upsert(self._object(name, cpu, keep))
        self._committed(before)

    @rule(name=NAMES)
    def delete(self, name: str) -> None:
        before = dict(self.model)
        self.model.pop(name, None)
        self.store.delete(name)
        self._committed(before)

    @rule(hosts=st.dictionaries(NAMES, st.tuples(st.integers(1, 64), st.booleans()), max_size=4))
    def replace(self, hosts: dict[str, tuple[int, bool]]) -> None:
        before = dict(self.model)
        self.model = {name: self.model[name] for name in hosts if name in self.model}
        objects = [self._object(name, cpu, keep) for name, (cpu, keep) in hosts.items()]
        self.store.replace(objects)
        self._committed(before)

    @rule()
    def bookmark(self) -> None:
        self.version += 1
        self.store.advance(str(self.version))
        self._committed(dict(self.model))

    @invariant()
    def matches_the_model(self) -> None:
        snapshot = self.store.snapshot
        assert snapshot.generation == self.generation
        assert self.replayed == {n: (v, cpu) for n, (v, cpu) in self.model.items()}
        for old, model in self.history:
            assert {
                h.name: (h.resource_version, h.resources["cpu"].physical) for h in old.ordered
            } == model


StoreMachine.TestCase.settings = settings(max_examples=150, stateful_step_count=30)
test_store_matches_a_model = StoreMachine.TestCase


def test_a_large_fleet_is_taken_out_of_the_cyclic_collector() -> None:
    """After enough new records, they are frozen (gc.freeze), so full collections no
    longer walk the fleet; a small change freezes nothing."""
    import gc

    gc.unfreeze()
    store = Store()
    store.replace([host(f"node-{n}", "1") for n in range(10)])
    assert gc.get_freeze_count() == 0
    store.replace([host(f"node-{n}", "1") for n in range(1200)])
    frozen = gc.get_freeze_count()
    assert frozen > 0
    store.upsert(host("node-0", "2"))
    # Nothing new was frozen, and the replaced record, frozen, was freed all the same.
    assert gc.get_freeze_count() < frozen
    assert store.snapshot.by_name["node-0"].resource_version == "2"
    gc.unfreeze()


def test_the_store_settles_every_25_changes_and_collects_all_once_per_fleet(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A settle walks what was made since the last one: often, so each pause is short.
    A thorough one walks the whole heap (a pause growing with the fleet): once per the
    fleet's size in changes, at least 1,000, which still frees what requests in flight
    at the settles before left behind. The first collects nothing (a whole new set left
    no cyclic garbage) and only freezes."""
    settles: list[tuple[int, bool | None]] = []

    def settle(thorough: bool) -> None:
        settles.append((store.snapshot.generation, thorough))

    def freeze() -> None:
        settles.append((store.snapshot.generation, None))

    monkeypatch.setattr(store_module, "settle", settle)
    monkeypatch.setattr(store_module, "freeze", freeze)
    # A clock that stands still: the changes alone decide (a settle that took long on a
    # busy machine would otherwise put the next thorough one off; see the test below).
    store = Store(clock=lambda: 0.0)
    store.replace([host(f"node-{n}", "1") for n in range(2000)])  # a whole new set
    for version in range(2, 4002):
        store.upsert(host(f"node-{version % 2000}", str(version)))
    assert [generation for generation, _ in settles] == list(range(1, 4002, 25))
    assert settles[0] == (1, None)
    assert [generation for generation, thorough in settles if thorough is None] == [1]
    assert [generation for generation, thorough in settles if thorough] == [2001, 4001]

    settles.clear()
    store = Store(clock=lambda: 0.0)
    store.replace([host(f"node-{n}", "1") for n in range(10)])
    for version in range(2, 2102):
        store.upsert(host(f"node-{version % 10}", str(version)))
    # 10 changes, then upserts: a settle every 25 changes from the 25th (generation 16),
    # then a thorough one every 1,000 changes
    assert [generation for generation, thorough in settles if thorough] == [1016, 2016]


def test_a_thorough_settle_waits_a_thousand_times_the_pause_of_the_last(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """At 333 changes a second the fleet's size in changes comes every minute at 20,000
    hosts, and a whole-heap walk pauses every answer meanwhile: never more than a
    thousandth of the time."""
    now = [0.0]
    settles: list[tuple[int, bool]] = []

    def settle(thorough: bool) -> None:
        settles.append((store.snapshot.generation, thorough))
        if thorough:
            now[0] += 0.5  # the whole heap's walk: none again for 500 s

    monkeypatch.setattr(store_module, "settle", settle)
    monkeypatch.setattr(store_module, "freeze", lambda: None)
    store = Store(clock=lambda: now[0])
    store.replace([host(f"node-{n}", "1") for n in range(2000)])
    for version in range(2, 8002):
        now[0] += 0.125  # 8 changes a second: the fleet's size in changes every 250 s
        store.upsert(host(f"node-{version % 2000}", str(version)))
    # 2001 came at 250 s, and paused until 250.5 s: none again for 500 s. 4001 came at
    # 500.5 s, too soon; the settle at 6001, at 750.5 s, was the first after.
    assert [generation for generation, thorough in settles if thorough] == [2001, 6001]


def test_name_order_is_handed_on_while_no_host_comes_or_goes(store: Store) -> None:
    store.replace([host("b", "1"), host("a", "2"), host("c", "3")])
    names = store.snapshot.names
    assert names == ("a", "b", "c")
    store.upsert(host("b", "4", cpu=16))
    assert store.snapshot.names is names  # not sorted again
    assert [h.resources["cpu"].physical for h in store.snapshot.ordered] == [8, 16, 8]
    store.upsert(host("aa", "5"))
    assert store.snapshot.names == ("a", "aa", "b", "c")
    store.delete("b")
    assert store.snapshot.names == ("a", "aa", "c")
