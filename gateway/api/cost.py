"""What a query will cost, estimated from its document and the fleet before it runs.

The static limits (depth, aliases, selections) bound a document's shape, not its
work: a depth-12 chain of hosts, their consumers and those consumers' hosts is
small on paper and enormous at run time, because every list in it multiplies
the work below it. The cost is that multiplication done in advance: each field
costs one per object it is resolved on, and a list field multiplies the cost of
its selections by the number of items it is expected to have.

Those numbers come from the store (:class:`Profile`): the number of hosts and
consumers, the mean length of each of a host's lists (bookings, instances, ...),
and the page a connection returns (``first``, else the page size limit, at most
the number of hosts or consumers). Root fields that scan the fleet whatever they
return (a filter, an order) cost one per host, or consumer, they scan; the fleet's
totals, its pages by name and its consumers' pages by UUID are kept by the store,
and cost what they return. Means are exact fractions, so a thousand hosts with
17.3 bookings each cost 17,300 bookings.
"""

from __future__ import annotations

import collections
import dataclasses
import itertools
import math
import operator
import weakref
from collections.abc import Callable, Mapping, Sized
from fractions import Fraction
from typing import Any, NamedTuple

from graphql import (
    DocumentNode,
    FieldNode,
    FragmentDefinitionNode,
    FragmentSpreadNode,
    GraphQLField,
    GraphQLNamedType,
    GraphQLObjectType,
    GraphQLSchema,
    InlineFragmentNode,
    IntValueNode,
    NullValueNode,
    OperationDefinitionNode,
    SchemaMetaFieldDef,
    SelectionSetNode,
    TypeMetaFieldDef,
    VariableNode,
    get_named_type,
    get_nullable_type,
    is_list_type,
    value_from_ast_untyped,
)

from gateway.domain.records import ConsumerBooking, ReservationBooking
from gateway.store.snapshot import Snapshot

__all__ = ["Cost", "Profile", "Profiles", "estimate"]

#: Hosts sampled for the mean lengths of their lists: the mean of a list whose length
#: varies by half its mean from host to host is within 7% of the fleet's (two standard
#: errors), and the sample takes under a millisecond (10,000 bookings at forty a host).
SAMPLE = 250
#: Changes after which list lengths are measured again.
REMEASURE = 1000

#: Items assumed for a list the profile knows nothing about (labels of an instance...).
OTHER_LIST = Fraction(8)

#: A consumer is booked on one host, or two while it migrates: two bounds it.
CONSUMER_HOSTS = Fraction(2)
#: A host is emptied by one eviction at a time, and most hosts by none: one bounds the mean.
HOST_EVICTIONS = Fraction(1)

#: The lists of a host whose mean lengths the profile measures (same names in GraphQL).
HOST_LISTS = (
    "aggregates",
    "bookings",
    "cells",
    "conditions",
    "consumers",
    "instances",
    "labels",
    "overcommit",
    "reservations",
    "resources",
    "traits",
)

#: The host lists that are its bookings of one kind, counted together.
_KINDS = {"consumers": ConsumerBooking, "reservations": ReservationBooking}
_RESOURCES = operator.attrgetter("resources")
_BOOKINGS = operator.attrgetter("bookings")

#: Root fields that scan every host whatever they return, given these arguments: the
#: fleet's totals and its first page by name are kept, a filter's or an order's are not.
SCANS: dict[str, frozenset[str] | None] = {
    "hypervisors": frozenset({"filter", "orderBy"}),
    "fleetCapacity": frozenset({"filter"}),
    # A catalog flavor's slots over the fleet are kept; a request's, a filter's or a
    # project's are counted host by host.
    "slots": frozenset({"filter", "project", "request", "drain"}),
    # A drain reads the fleet: its hosts' consumers are placed one by one.
    "drainPlan": None,
    "placementProvider": None,  # always
}
#: Root fields whose scan, given these arguments and none of the others in SCANS, is
#: of hosts the store keeps from change to change once asked (a filter's selection,
#: gateway.store.views): their cost is the scan's only the first time.
KEPT_SCANS: dict[str, frozenset[str]] = {"hypervisors": frozenset({"filter"})}
#: Root fields that scan every consumer, given these arguments: their UUID order is kept.
CONSUMER_SCANS: dict[str, frozenset[str] | None] = {"consumers": frozenset({"filter"})}
#: The arguments of SCANS whose scan is not kept, per field of KEPT_SCANS.
_UNKEPT_SCANS: dict[str, frozenset[str] | None] = {
    name: (SCANS[name] or frozenset()) - kept for name, kept in KEPT_SCANS.items()
}


class Cost(NamedTuple):
    """An operation's estimated cost, and the part of it that scans for selections
    the store may keep: run where a small operation runs, an operation that then
    finds its selections kept costs the rest."""

    total: int
    kept: int = 0


@dataclasses.dataclass(frozen=True, slots=True)
class Profile:
    """What the store knows about list sizes, for :func:`estimate`."""

    hosts: int
    consumers: int
    #: (GraphQL type, field) -> mean number of items per object.
    lists: Mapping[tuple[str, str], Fraction]

    def resized(self, hosts: int) -> Profile:
        """This profile's list lengths for a fleet of ``hosts`` (this very profile while the
        count is the same, so that estimates kept per profile stay valid)."""
        if hosts == self.hosts:
            return self
        per_host = self.lists[("Hypervisor", "consumers")]
        return dataclasses.replace(self, hosts=hosts, consumers=math.ceil(hosts * per_host))

    @classmethod
    def measure(cls, snapshot: Snapshot) -> Profile:
        """The profile of a snapshot: its host count, and list lengths from a sample.

        Measured on the event loop, once every :data:`REMEASURE` changes (every 3 s at
        333 changes a second), so everything is counted in C, over few hosts: making
        each host's consumers and reservations to count them took 6-14 ms, counting
        the bookings of 1,000 hosts in C still held the loop 9 ms.
        """
        sample = list(itertools.islice(snapshot.by_name.values(), SAMPLE))
        lists = {
            ("Hypervisor", name): _mean(sample, operator.attrgetter(name))
            for name in HOST_LISTS
            if name not in _KINDS
        }
        bookings = list(itertools.chain.from_iterable(map(_BOOKINGS, sample)))
        kinds = collections.Counter(map(type, bookings))
        for name, kind in _KINDS.items():
            counted = sum(n for t, n in kinds.items() if issubclass(t, kind))
            lists[("Hypervisor", name)] = Fraction(counted, len(sample) or 1)
        per_booking = _mean(bookings, _RESOURCES)
        lists[("ConsumerBooking", "resources")] = per_booking
        lists[("ReservationBooking", "resources")] = per_booking
        lists[("Consumer", "bookings")] = CONSUMER_HOSTS
        lists[("Consumer", "hypervisors")] = CONSUMER_HOSTS
        lists[("Hypervisor", "evictions")] = HOST_EVICTIONS
        consumers = math.ceil(len(snapshot) * lists[("Hypervisor", "consumers")])
        return cls(len(snapshot), consumers, lists)


class Profiles:
    """The profiles of one store's snapshots, measured at most once per ``REMEASURE``
    changes.

    Under churn every change makes a snapshot, and measuring took ~10 ms of each
    first query after one on a loaded machine, most of an otherwise cheap answer's
    time; the mean of a list over a thousand hosts barely moves with a few changes.
    """

    def __init__(self) -> None:
        #: One per snapshot still referenced: gone with it.
        self._of: weakref.WeakKeyDictionary[Snapshot, Profile] = weakref.WeakKeyDictionary()
        #: The last profile measured, with the generation of its snapshot.
        self._last: tuple[int, Profile] | None = None

    def of(self, snapshot: Snapshot) -> Profile:
        profile = self._of.get(snapshot)
        if profile is None:
            last = self._last
            if last is not None and 0 <= snapshot.generation - last[0] < REMEASURE:
                profile = last[1].resized(len(snapshot))
            else:
                profile = Profile.measure(snapshot)
                self._last = (snapshot.generation, profile)
            self._of[snapshot] = profile
        return profile


def _mean(items: list[Any], of: Callable[[Any], Sized]) -> Fraction:
    """The mean length of ``of(item)``, summed in C: this runs on the event loop."""
    return Fraction(sum(map(len, map(of, items))), len(items)) if items else Fraction(0)


def estimate(
    schema: GraphQLSchema,
    document: DocumentNode,
    operation: OperationDefinitionNode,
    variables: Mapping[str, Any] | None,
    profile: Profile,
    max_page_size: int,
) -> Cost:
    """The estimated cost of ``operation``: fields it will resolve, lists multiplied out."""
    root = schema.get_root_type(operation.operation)
    if root is None:
        return Cost(0)
    fragments = {
        d.name.value: d for d in document.definitions if isinstance(d, FragmentDefinitionNode)
    }
    values = _variables(operation, variables)
    walk = _Walk(schema, fragments, values, profile, max_page_size)
    total = math.ceil(walk.root(operation.selection_set, root))
    return Cost(total, walk.kept(operation.selection_set))


def _variables(
    operation: OperationDefinitionNode, given: Mapping[str, Any] | None
) -> dict[str, Any]:
    values = {
        d.variable.name.value: value_from_ast_untyped(d.default_value)
        for d in operation.variable_definitions or ()
        if d.default_value is not None
    }
    values.update(given or {})
    return values


class _Walk:
    def __init__(
        self,
        schema: GraphQLSchema,
        fragments: dict[str, FragmentDefinitionNode],
        variables: dict[str, Any],
        profile: Profile,
        max_page_size: int,
    ) -> None:
        self.schema = schema
        self.fragments = fragments
        self.variables = variables
        self.profile = profile
        self.max_page_size = max_page_size
        self.memo: dict[tuple[str, int], Fraction] = {}

    def root(self, selection_set: SelectionSetNode, root: GraphQLObjectType) -> Fraction:
        roots = [s for s in selection_set.selections if isinstance(s, FieldNode)]
        scans = sum(self.profile.hosts for s in roots if self.scans(s, SCANS))
        consumers = sum(self.profile.consumers for s in roots if self.scans(s, CONSUMER_SCANS))
        return scans + consumers + self.selections(selection_set, root, 0)

    def kept(self, selection_set: SelectionSetNode) -> int:
        """Hosts the root fields scan for selections the store may keep."""
        roots = [s for s in selection_set.selections if isinstance(s, FieldNode)]
        return sum(
            self.profile.hosts
            for s in roots
            if self.scans(s, KEPT_SCANS) and not self.scans(s, _UNKEPT_SCANS)
        )

    def scans(self, node: FieldNode, scanning: Mapping[str, frozenset[str] | None]) -> bool:
        """Whether a root field that is one of ``scanning`` scans: always, or when given
        one of its arguments."""
        name = node.name.value
        if name not in scanning:
            return False
        arguments = scanning[name]
        return arguments is None or any(
            a.name.value in arguments and self.given(a.value) for a in node.arguments or ()
        )

    def given(self, value: Any) -> bool:
        """An argument's value is given unless it is null, as a literal or a variable."""
        if isinstance(value, NullValueNode):
            return False
        if isinstance(value, VariableNode):
            return self.variables.get(value.name.value) is not None
        return True

    def selections(
        self, selection_set: SelectionSetNode | None, parent: GraphQLNamedType, page: int
    ) -> Fraction:
        """The cost of ``selection_set`` on one object of ``parent``.

        ``page`` is the page size of the connection the object belongs to, if any.
        """
        total = Fraction(0)
        if selection_set is None:
            return total
        for selection in selection_set.selections:
            if isinstance(selection, FieldNode):
                total += self.field(selection, parent, page)
            elif isinstance(selection, InlineFragmentNode):
                condition = selection.type_condition
                inner = self.schema.get_type(condition.name.value) if condition else parent
                total += self.selections(selection.selection_set, inner or parent, page)
            else:
                assert isinstance(selection, FragmentSpreadNode)
                total += self.fragment(selection.name.value, page)
        return total

    def fragment(self, name: str, page: int) -> Fraction:
        key = (name, page)
        if key not in self.memo:
            definition = self.fragments.get(name)
            if definition is None:
                return Fraction(0)
            condition = self.schema.get_type(definition.type_condition.name.value)
            self.memo[key] = (
                Fraction(0)
                if condition is None
                else self.selections(definition.selection_set, condition, page)
            )
        return self.memo[key]

    def field(self, node: FieldNode, parent: GraphQLNamedType, page: int) -> Fraction:
        definition = _field(parent, node.name.value)
        if definition is None or node.selection_set is None:
            return Fraction(1)
        named = get_named_type(definition.type)
        if named.name.endswith("Connection"):
            page = self.page(node)
        items = Fraction(1)
        if is_list_type(get_nullable_type(definition.type)):
            items = self.items(parent.name, node.name.value, page)
        return 1 + items * self.selections(node.selection_set, named, page)

    def items(self, parent: str, field: str, page: int) -> Fraction:
        if parent.endswith("Connection") and field in ("nodes", "edges"):
            return Fraction(page)
        if parent == "Query" and field == "fleetCapacity":
            return OTHER_LIST
        if parent == "SlotGroup" and field == "hypervisors":
            return Fraction(self.profile.hosts)  # a group's hosts, found in the fleet
        return self.profile.lists.get((parent, field), OTHER_LIST)

    def page(self, node: FieldNode) -> int:
        """The page a connection field returns: ``first`` (none below 0), or the limit; at
        most all there are."""
        first: Any = None
        for argument in node.arguments or ():
            if argument.name.value == "first":
                value = argument.value
                if isinstance(value, VariableNode):
                    first = self.variables.get(value.name.value)
                elif isinstance(value, IntValueNode):
                    first = int(value.value)
        size = max(first, 0) if isinstance(first, int) else self.max_page_size
        available = self.profile.consumers if node.name.value == "consumers" else self.profile.hosts
        return min(size, self.max_page_size, available)


def _field(parent: GraphQLNamedType, name: str) -> GraphQLField | None:
    if name == "__schema":
        return SchemaMetaFieldDef
    if name == "__type":
        return TypeMetaFieldDef
    fields = getattr(parent, "fields", None)
    return fields.get(name) if fields is not None else None
