"""The short-path executor answers exactly as graphql-core's own executor does."""

from __future__ import annotations

import contextlib
import json
from dataclasses import dataclass
from typing import Any

import pytest
import strawberry
from graphql import ExecutionResult, GraphQLSchema, execute, parse
from graphql.execution.collect_fields import CollectedFields, FieldDetails
from hypothesis import HealthCheck, given, settings
from hypothesis_graphql import from_schema
from strawberry.schema.config import StrawberryConfig

from gateway.api.budget import Budget, Overrun
from gateway.api.context import Context
from gateway.api.executor import Executor
from gateway.api.schema import build_schema, schema, sdl
from gateway.api.shortcuts import Attribute, Lookup, shortcut_resolvers
from gateway.api.subscriptions import ChangeType, HypervisorChange
from gateway.domain.flavors import load_catalog
from gateway.sources.demo.source import generate
from gateway.store.source import SyncStatus
from gateway.store.store import Store
from tests import fleet, scalar_values

#: One schema twice: with Strawberry's own resolvers, and with the shortcuts installed.
Schemas = tuple[GraphQLSchema, GraphQLSchema]


def both(
    schemas: Schemas,
    document: str,
    context: Any = None,
    variables: dict[str, Any] | None = None,
) -> tuple[ExecutionResult, ExecutionResult]:
    """graphql-core's executor on the unmodified schema, and ours with the shortcuts:
    checked to give the same answer."""
    results = tuple(
        execute(
            graphql_schema,
            parse(document),
            context_value=context,
            variable_values=variables,
            executor_class=executor,
        )
        for graphql_schema, executor in zip(schemas, (None, Executor), strict=True)
    )
    plain, short = results
    assert isinstance(plain, ExecutionResult) and isinstance(short, ExecutionResult)
    assert short.data == plain.data
    assert [e.formatted for e in short.errors or ()] == [e.formatted for e in plain.errors or ()]
    return plain, short


# -- the real schema, on a fleet with every kind of object ---------------------------

REAL: Schemas = (build_schema(shortcuts=False)._schema, schema._schema)

store = Store()
store.replace([*fleet.objects(), *generate(20, seed=1, bookings_per_host=5)])
store.mark_ready()
CONTEXT = Context(
    store,
    SyncStatus(source="test", synced=True),
    None,  # type: ignore[arg-type]
    catalog=load_catalog(None),
)


def test_the_hot_fields_take_the_short_path() -> None:
    fields = schema._schema.type_map["Hypervisor"].fields  # type: ignore[union-attr]
    assert type(fields["name"].resolve) is Attribute
    assert type(fields["resource"].resolve) is Lookup
    own = REAL[0].type_map["Hypervisor"].fields  # type: ignore[union-attr]
    assert not isinstance(own["name"].resolve, Attribute | Lookup)
    assert not isinstance(own["resource"].resolve, Attribute | Lookup)
    plain, _ = both(
        REAL,
        '{ hypervisors { nodes { name zone cpu: resource(name: "cpu") { free capacity }'
        ' gpu: resource(name: "nvidia.com/gpu") { free } warnings } } }',
        CONTEXT,
    )
    assert plain.data is not None and len(plain.data["hypervisors"]["nodes"]) > 20


def test_capacity_views_and_slots_answer_alike() -> None:
    fields = schema._schema.type_map["ResourceCapacity"].fields  # type: ignore[union-attr]
    assert type(fields["available"].resolve) is Attribute
    plain, _ = both(
        REAL,
        '{ hypervisors(filter: {view: ALLOCATION}) { nodes { name cpu: resource(name: "cpu") {'
        " free available basis used unallocated utilization overcommitted } } }"
        " fleetCapacity(groupBy: ZONE) { key trackedHosts resources { name available used"
        " trackedHosts untrackedHosts utilization } }"
        " flavors { name slots(groupBy: ZONE) { key slots allocationSlots hostsWithRoom"
        " hostsUnknown hosts hypervisors { hypervisor { name } slots basis } } } }",
        CONTEXT,
    )
    assert plain.data is not None and len(plain.data["flavors"]) == len(load_catalog(None).flavors)


def test_lookup_arguments_from_variables_and_aliases() -> None:
    both(
        REAL,
        "query($a: String!, $b: String!) { hypervisors { nodes {"
        " a: resource(name: $a) { name free } b: resource(name: $b) { name free }"
        " zone: label(key: $a) } } }",
        CONTEXT,
        {"a": "memory", "b": "cpu"},
    )


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    query=from_schema(
        sdl(),
        custom_scalars=scalar_values.strategies(),
        fields=["hypervisors", "hypervisor", "consumers", "fleetCapacity", "slots", "flavors"],
    )
)
def test_generated_queries_answer_alike(query: str) -> None:
    both(REAL, query, CONTEXT)


# -- errors and nulls, on a schema made to produce them ------------------------------


@dataclass(frozen=True)
class Part:
    size: int
    label: str | None = None


@strawberry.type
class PartView:
    size: int
    label: str  # non-null, though a Part may have none


@strawberry.type
class TaggedView:
    tag: str

    @classmethod
    def is_type_of(cls, obj: Any, info: Any) -> bool:
        return isinstance(obj, Tagged)


@dataclass
class Tagged:
    tag: str


@strawberry.type
class Machine:
    name: str
    serial: str  # non-null, though a machine may have none
    count: int  # an Int, though a machine may hold a string
    main: PartView  # non-null, though a machine may have none
    spare: PartView | None
    tagged: TaggedView | None  # a machine may hold something else

    @strawberry.field
    def part(self, root: strawberry.Parent[Any], name: str) -> PartView | None:
        if name == "boom":
            raise ValueError("no such part: boom")
        return root.parts.get(name)  # type: ignore[no-any-return]


@dataclass
class MachineRecord:
    name: str
    serial: str | None
    count: Any
    parts: dict[str, Part]
    main: Part | None = Part(1, "main")
    spare: Part | None = None
    tagged: Any = None


MACHINES = [
    MachineRecord("ok", "s-1", 3, {"cpu": Part(4, "x")}, spare=Part(8, "s"), tagged=Tagged("t")),
    MachineRecord("no-serial", None, 1, {"cpu": Part(2)}, main=Part(2), tagged="not a tag"),
    MachineRecord("bad-count", "s-3", "three", {}, main=None, spare=Part(9)),
]


@strawberry.type
class Root:
    @strawberry.field
    def machines(self) -> list[Machine]:
        return MACHINES  # type: ignore[return-value]

    @strawberry.field
    def machine(self) -> Machine:
        return MACHINES[1]  # type: ignore[return-value]


@pytest.fixture(scope="module")
def machines() -> Schemas:
    built = strawberry.Schema(query=Root)
    shortcut_resolvers(built, [("Machine", "part")])
    return strawberry.Schema(query=Root)._schema, built._schema


@pytest.mark.parametrize(
    ("document", "errors"),
    [
        ("{ machines { name count } }", 1),  # Int serialization fails on one
        ("{ machines { name serial } }", 1),  # null for a non-null field: the list item goes
        ("{ machine { serial } }", 1),  # ... or up to the nullable root
        ('{ machines { part(name: "cpu") { size } } }', 0),
        ('{ machines { part(name: "cpu") { size label } } }', 1),  # non-null below the lookup
        ('{ machines { part(name: "gpu") { size } } }', 0),  # no such part: null
        ('{ machines { part(name: "boom") { size } } }', 3),  # the lookup raises
        ('{ machines { __typename part(name: "cpu") { __typename size } } }', 0),
        ("{ machines { name spare { size label } } }", 1),  # non-null below an attribute
        ("{ machines { name main { size } } }", 1),  # an attribute's null for a non-null one
        ("{ machine { main { label } } }", 1),  # ... up to the nullable root
        ("{ machines { tagged { tag } } }", 1),  # not of its type: is_type_of says so
        ("{ machines { main { __typename size } spare { size } } }", 1),
    ],
)
def test_errors_and_nulls_read_as_graphql_core_words_them(
    machines: Schemas, document: str, errors: int
) -> None:
    plain, _ = both(machines, document)
    assert len(plain.errors or ()) == errors


def test_an_object_attribute_takes_the_short_path(
    machines: Schemas, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A change's ``hypervisor``: an attribute holding an object is completed without
    graphql-core's execute_field (a ResolveInfo, Strawberry's wrappers) for it."""
    from graphql.execution.incremental.incremental_executor import IncrementalExecutor

    full: list[str] = []
    execute_field = IncrementalExecutor.execute_field

    def counted(self: Any, parent_type: Any, source: Any, details: Any, *rest: Any) -> Any:
        full.append(details[0].node.name.value)
        return execute_field(self, parent_type, source, details, *rest)

    document = "{ machines { spare { size } tagged { tag } } }"
    _, short = both(machines, document)
    assert short.errors  # one machine holds no TaggedView: the full path says so
    monkeypatch.setattr(IncrementalExecutor, "execute_field", counted)
    execute(machines[1], parse(document), executor_class=Executor)
    assert full.count("spare") == 0
    assert full.count("tagged") == 1  # the one that is not a TaggedView


def test_an_objects_fields_are_walked_by_its_selections_plan(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A selection of attributes and lookups that reads no variable is completed by its
    plan (gateway.api.plans): no field of a host takes the per-field path. One that
    reads a variable is not planned (a plan is kept for every run of its operation)."""
    fields: list[str] = []
    execute_field = Executor._execute_field

    def counted(self: Any, parent_type: Any, source: Any, details: Any, *rest: Any) -> Any:
        fields.append(details[0].node.name.value)
        return execute_field(self, parent_type, source, details, *rest)

    monkeypatch.setattr(Executor, "_execute_field", counted)
    literal = '{ hypervisors { nodes { name cpu: resource(name: "cpu") { free } } } }'
    both(REAL, literal, CONTEXT)
    assert fields == ["hypervisors", "nodes"]
    fields.clear()
    variable = "query($r: String!) { hypervisors { nodes { name resource(name: $r) { free } } } }"
    both(REAL, variable, CONTEXT, {"r": "cpu"})
    # The host's fields one by one; the resource's, which read no variable, by its plan.
    assert fields.count("name") == fields.count("resource") == len(store.snapshot)
    assert "free" not in fields


def test_a_planned_object_is_charged_its_answers_bytes() -> None:
    """A plan charges an object's JSON at once, where the full path charges field by field:
    both about the answer's size."""
    spent = []
    hosts = 'hypervisors { nodes { name zone cpu: resource(name: "cpu") { free capacity } } }'
    zones = "fleetCapacity(groupBy: ZONE) { key resources { name capacity booked free } }"
    for query in (f"{{ {hosts} }}", f"{{ {hosts} {zones} }}"):
        context = CONTEXT.pinned_to(store.snapshot)
        context.budget = budget = Budget(60.0, 10**9)
        result = execute(
            schema._schema, parse(query), context_value=context, executor_class=Executor
        )
        assert isinstance(result, ExecutionResult) and not result.errors
        size = len(json.dumps({"data": result.data}, separators=(",", ":")))
        assert 0.9 * size <= budget.spent <= 1.1 * size
        spent.append(budget.spent)
    assert spent[0] < spent[1]


@strawberry.type
class Rack:
    machines: list[Machine]

    @strawberry.field
    def slot(self, root: strawberry.Parent[Any], number: int) -> Machine | None:
        return None


@strawberry.type
class RackRoot:
    @strawberry.field
    def rack(self) -> Rack | None:
        return None


@pytest.mark.parametrize(
    ("lookup", "reason"),
    [
        (("Shelf", "part"), "Shelf is not an object type"),
        (("Machine", "parts"), "Machine has no such field"),
        (("Machine", "name"), "needs a resolver of its own"),
        (("Rack", "slot"), "takes an argument that is not a String"),
    ],
)
def test_a_lookup_that_does_not_qualify_is_refused(lookup: tuple[str, str], reason: str) -> None:
    """A guard, not an assert: ``python -O`` would drop an assert and install it anyway."""
    built = strawberry.Schema(query=RackRoot)
    with pytest.raises(TypeError, match=reason):
        shortcut_resolvers(built, [lookup])


def test_attribute_fields_need_the_default_resolver_to_be_getattr() -> None:
    config = StrawberryConfig(default_resolver=lambda source, name: getattr(source, name))
    built = strawberry.Schema(query=Root, config=config)
    with pytest.raises(TypeError, match="getattr"):
        shortcut_resolvers(built, [])


def test_subscription_events_are_executed_by_the_same_executor() -> None:
    """Strawberry runs subscriptions; each event's selection must take the short paths
    and reuse completed records as queries do."""
    assert schema.execution_context_class is Executor
    assert build_schema(shortcuts=False).execution_context_class is not Executor


async def test_a_subscription_keeps_nothing_of_the_events_it_executed() -> None:
    """A subscription lives for hours: what it makes of each event must go with the
    event. graphql-core's per-event copy shared the subscription's memo of collected
    fields, keyed by lists each event makes anew: it grew with every event."""
    import gc

    from gateway.store.feed import Feed
    from tests.objects import hypervisor

    own = Store()
    own.replace([hypervisor(f"node-{n}", resource_version="1") for n in range(5)])
    feed = Feed(own)
    feed.start()
    context = Context(own, SyncStatus(source="test", synced=True), feed, pinned=False)
    # A lookup in it: graphql-core executes each event (attributes alone are planned).
    query = """subscription { hypervisorChanged { type hypervisor { name resourceVersion
        resource(name: "cpu") { free } } } }"""
    executor = Executor.build(schema._schema, parse(query), None, context)
    assert isinstance(executor, Executor)

    async def events(count: int, first: int) -> None:
        with feed.changes() as commits:
            for version in range(first, first + count):
                own.upsert(hypervisor(f"node-{version % 5}", resource_version=str(version)))
                commit = await anext(commits)
                change = commit.changes[0]
                payload = HypervisorChange(  # type: ignore[call-arg]
                    type=ChangeType.MODIFIED,
                    hypervisor=change.hypervisor,
                    snapshot=commit.after,
                    generation=commit.after.generation,
                )
                result = executor.build_per_event_executor(payload).execute_operation(False)
                assert not result.errors
                name = result.data["hypervisorChanged"]["hypervisor"]["name"]
                assert name == change.hypervisor.name

    def alive() -> int:
        """The fields collected: what graphql-core makes of a selection, per event."""
        gc.unfreeze()  # the store's settles freeze what is alive
        gc.collect()
        return sum(isinstance(o, (CollectedFields, FieldDetails)) for o in gc.get_objects())

    await events(50, 2)
    before = alive()
    await events(200, 52)
    assert alive() == before  # not 7 more per event
    feed.stop()


@pytest.mark.parametrize("overrun", [False, True])
def test_an_operation_frees_its_snapshot_without_the_cyclic_collector(overrun: bool) -> None:
    """Answered, or ended by its budget in the middle (a frozen executor that is then
    left in a cycle is never freed)."""
    import gc
    import weakref

    own = Store()
    own.replace(generate(3, seed=2, bookings_per_host=1))
    context = Context(own, SyncStatus(source="test", synced=True), None)  # type: ignore[arg-type]
    if overrun:
        context.budget = Budget(60.0, max_bytes=0)
        context.budget.ticks = 1  # looked at with the first field
    held = weakref.ref(context.snapshot)
    collecting = gc.isenabled()
    gc.disable()  # a gc.freeze (the store's settle) would keep whatever a cycle holds
    try:
        with pytest.raises(Overrun) if overrun else contextlib.nullcontext():
            result = execute(
                schema._schema,
                parse("{ hypervisors { nodes { name } } }"),
                context_value=context,
                executor_class=Executor,
            )
            assert isinstance(result, ExecutionResult) and not result.errors
            del result
        del context
        own.replace([])  # the store moves on: nothing but the answer held the old snapshot
        assert held() is None
    finally:
        if collecting:
            gc.enable()
