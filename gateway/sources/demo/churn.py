"""Changes to the demo fleet as a region sees them all day (``--demo-churn SECONDS``).

A fleet that never changes gives subscriptions, the dashboard's live view and
the sync figures nothing to show. Each step makes on one host one change Nova
makes all the time: an instance created where it fits (the size, and where
tracked the project and user, of one already there; running), or a running one
deleted. The object changes as Placement's bookings and the node agent would
write it: ``spec.bookings`` where the host is tracked, ``status.instances``,
``numInstances`` and the allocation totals (per-cell figures are left as they
were, as if the agent had not yet reported them), so that an untracked fleet
(``--demo-tracked 0``) moves as well. The steps come from a seeded generator:
one seed, one sequence of changes. Each change is applied to the store that
serves the fleet, whose parsed records also tell what fits where.

The objects to change are kept encoded (msgpack), as an API server keeps them,
and decoded for the step that changes one: decoded, a 20,000-host fleet is a
million dicts and lists, each walked by every collection of the whole heap (the
store's settle): 1.36 s per collection, against 0.04 s for the store's own
records, which the collector does not track. A step decodes one host's object
(about 0.1 ms), and has a copy of its own to change.
"""

from __future__ import annotations

import copy
import random
import uuid
from collections.abc import Iterable, Mapping
from decimal import Decimal
from typing import Any

import msgspec

from gateway.domain import capacity
from gateway.domain.quantity import QuantityError, format_quantity, parse_quantity
from gateway.domain.records import Hypervisor
from gateway.store.store import Store

__all__ = ["Churn"]


class Churn:
    """Changes, one at a time, the hosts of ``objects`` (served by ``store``) that can take one.

    ``domains`` gives the size of the libvirt domains on untracked hosts, by
    instance UUID (their objects only list the instances); a tracked host's
    bookings give its own. The changes are versions ``version + 1`` on.
    """

    def __init__(
        self,
        store: Store,
        objects: Iterable[dict[str, Any]],
        seed: int = 0,
        domains: Mapping[str, Mapping[str, Any]] | None = None,
        version: int = 0,
    ) -> None:
        self.store = store
        self.rng = random.Random(seed)
        self.domains = dict(domains or {})
        records = store.snapshot.by_name
        self.objects = {
            name: _encode(o)
            for o in objects
            if (name := o["metadata"]["name"]) in records
            and _changeable(o, records[name])
            and self._instances(o)[0]
        }
        self.names = sorted(self.objects)
        self.created = 0
        #: The resourceVersion of the last change: each step's object gets the next, as
        #: an API server's write does (a store compares versions, not contents).
        self.version = version

    def step(self) -> dict[str, Any] | None:
        """Change one host in the store; its new object, or None when no host can change."""
        if not self.names:
            return None
        name = self.rng.choice(self.names)
        obj = _decode(self.objects[name])
        templates, deletable = self._instances(obj)
        template = self.rng.choice(templates) if templates else None
        if (
            template is not None
            and (not deletable or self.rng.random() < 0.5)
            and _fits(self.store.snapshot.by_name[name], template["resources"])
        ):
            changed = self._create(obj, template)
        elif deletable:
            changed = self._delete(obj, self.rng.choice(deletable))
        else:
            return None
        self.version += 1
        changed["metadata"]["resourceVersion"] = str(self.version)
        self.objects[name] = _encode(changed)
        self.store.upsert(changed)
        return changed

    def _instances(self, obj: dict[str, Any]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """The consumers a new instance may copy, and the running instances that may go:
        a tracked host's bookings, or an untracked host's domains of known size."""
        running = {i["id"] for i in obj["status"]["instances"] if i.get("active") is True}
        bookings = obj["spec"].get("bookings")
        if bookings is None:
            # Sorted: a set's order is not the seed's.
            known = sorted(running & self.domains.keys())
            instances = [{"uuid": u, "resources": self.domains[u]} for u in known]
            return instances, instances
        consumers = [b["consumer"] for b in bookings if "consumer" in b]
        deletable = [
            c for c in consumers if c.get("consumerType") == "INSTANCE" and c["uuid"] in running
        ]
        return consumers, deletable

    def _create(self, obj: dict[str, Any], template: dict[str, Any]) -> dict[str, Any]:
        """``obj`` (a host's object, decoded for this step) with one instance more."""
        consumer = copy.deepcopy(template)
        consumer.update(uuid=str(uuid.UUID(int=self.rng.getrandbits(128), version=4)))
        if "bookings" in obj["spec"]:
            consumer.update(consumerType="INSTANCE", consumerGeneration=1)
            obj["spec"]["bookings"].append({"consumer": consumer})
        else:
            self.domains[consumer["uuid"]] = consumer["resources"]
        self.created += 1
        instance = {"id": consumer["uuid"], "name": f"demo-{self.created:06d}", "active": True}
        obj["status"]["instances"].append(instance)
        _account(obj["status"], consumer["resources"], 1)
        return obj

    def _delete(self, obj: dict[str, Any], consumer: dict[str, Any]) -> dict[str, Any]:
        """``obj`` without the instance of ``consumer``."""
        gone = consumer["uuid"]
        spec, status = obj["spec"], obj["status"]
        if "bookings" in spec:
            spec["bookings"] = [
                b for b in spec["bookings"] if b.get("consumer", {}).get("uuid") != gone
            ]
        else:
            del self.domains[gone]
        status["instances"] = [i for i in status["instances"] if i["id"] != gone]
        _account(status, consumer["resources"], -1)
        return obj


def _changeable(obj: dict[str, Any], record: Hypervisor) -> bool:
    """A host that is Ready, not in maintenance, and whose figures add up."""
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    return (
        isinstance(spec.get("bookings", []), list)
        and isinstance(status.get("instances"), list)
        and set(status.get("allocation") or {}) >= {"cpu", "memory"}
        and record.ready
        and record.maintenance is None
        and not record.warnings
    )


def _encode(obj: dict[str, Any]) -> bytes:
    return _ENCODER.encode(obj)


def _decode(data: bytes) -> dict[str, Any]:
    decoded: dict[str, Any] = _DECODER.decode(data)
    return decoded


_ENCODER = msgspec.msgpack.Encoder()
_DECODER = msgspec.msgpack.Decoder()


def _fits(record: Hypervisor, resources: dict[str, Any]) -> bool:
    try:
        request = {name: parse_quantity(amount) for name, amount in resources.items()}
    except QuantityError:
        return False
    return capacity.fits(record, request)


def _account(status: dict[str, Any], resources: dict[str, Any], sign: int) -> None:
    """numInstances and the allocation totals, after an instance came (1) or went (-1)."""
    status["numInstances"] = len(status["instances"])
    allocation = status["allocation"]
    for name, amount in resources.items():
        total = parse_quantity(allocation.get(name, 0)) + sign * parse_quantity(amount)
        allocation[name] = format_quantity(max(total, Decimal(0)))
