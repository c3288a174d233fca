"""What an answer read: valid while those records and views are the same, and no longer."""

from __future__ import annotations

import gc
import weakref

from gateway.domain import fleet
from gateway.domain.ledger import Ledger
from gateway.domain.parse import parse_hypervisor
from gateway.store.ordered import FLEET_ORDER
from gateway.store.reads import Reads
from gateway.store.selections import Selection
from gateway.store.store import Store
from gateway.store.views import ledger_key
from tests.objects import reported


def _store() -> Store:
    store = Store()
    store.replace([reported("node-a"), reported("node-b")])
    return store


def test_hosts_read_by_name_are_valid_while_the_same_records() -> None:
    store = _store()
    reads = Reads.narrow([("node-a", store.snapshot.by_name["node-a"]), ("node-x", None)])
    store.upsert(reported("node-b", cpu=8))
    assert reads.valid(store.snapshot)
    store.upsert(reported("node-a", cpu=8))
    assert not reads.valid(store.snapshot)


def test_a_host_read_as_missing_is_valid_until_it_comes() -> None:
    store = _store()
    reads = Reads.narrow([("node-x", None)])
    assert reads.valid(store.snapshot)
    store.upsert(reported("node-x"))
    assert not reads.valid(store.snapshot)


def test_a_host_read_is_invalid_once_deleted() -> None:
    store = _store()
    reads = Reads.narrow([("node-a", store.snapshot.by_name["node-a"])])
    store.delete("node-a")
    assert not reads.valid(store.snapshot)


def test_reads_keep_no_record_alive() -> None:
    """A cache keeps thousands of reads: a record replaced since, or a selection the
    store let go, lives on in none of them."""
    store = _store()
    record = parse_hypervisor(reported("node-a"))
    selection = Selection.of(lambda h: True, store.snapshot.ordered)
    key = ("selection", "every host")
    reads = Reads.narrow([("node-a", record)], [(key, selection)], store.views)
    gone = weakref.ref(record), weakref.ref(selection)
    del record, selection
    gc.collect()
    assert [ref() for ref in gone] == [None, None]
    assert not reads.valid(store.snapshot)


def test_reads_are_charged_per_host_and_view_read() -> None:
    store = _store()
    records = list(store.snapshot.by_name.items())
    one, two = Reads.narrow(records[:1]), Reads.narrow(records)
    assert 0 < one.nbytes() < two.nbytes() < 2 * one.nbytes() + 200
    paged = Reads.narrow(records, ((FLEET_ORDER, store.snapshot.members),), store.views)
    assert paged.nbytes() > two.nbytes()


def test_the_fleets_order_is_valid_while_no_host_comes_or_goes() -> None:
    store = _store()
    reads = Reads.narrow([], ((FLEET_ORDER, store.snapshot.members),), store.views)
    store.upsert(reported("node-a", cpu=8))
    assert reads.valid(store.snapshot)
    store.upsert(reported("node-c"))
    assert not reads.valid(store.snapshot)


def test_a_ledger_read_is_valid_while_its_sums_are_the_same_value() -> None:
    store = _store()
    tally = fleet.tally(fleet.Grouping.ZONE)
    key = ledger_key(tally)
    reads = Reads.narrow([], ((key, store.views.ledger(store.snapshot, tally)),), store.views)
    store.upsert(reported("node-a", memory="262144Mi"))  # 256Gi spelled otherwise
    assert reads.valid(store.snapshot)
    store.upsert(reported("node-a", cpu=8))
    assert not reads.valid(store.snapshot)
    # Sums equal to the kept ones, but not the value kept (say, made again after the
    # kept one was let go), prove nothing: the answer is made again.
    recounted = Ledger.of(tally, store.snapshot.by_name.values())
    assert not Reads.narrow([], ((key, recounted),), store.views).valid(store.snapshot)
    # Nor does a view no longer kept, and none is made to check.
    other = fleet.tally(fleet.Grouping.REGION)
    assert not Reads.narrow([], ((ledger_key(other), recounted),), store.views).valid(
        store.snapshot
    )
    assert store.views.made == 1
