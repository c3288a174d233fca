"""Which hosts the scheduler may use for a request, and why not the others (domain
brief, section 8).

Nova asks Placement only for providers that pass its request filters, and its host
filters drop more; a host they drop has no slot, however much is free on it. Each
rule is a :class:`Reason`, checked in the order of the enum, and a host that fails
several is counted under the first. The rules follow Nova's code:

- NOT_READY: the Ready condition is not True (the compute service is down);
- DISABLED: ``spec.maintenance`` is set or the host is evicted (the operator
  disables the service), or it has the trait COMPUTE_STATUS_DISABLED, which Nova's
  ``compute_status_filter`` forbids on every request;
- PROJECT_RESTRICTED: ``spec.allowedProjects`` does not list the asking project
  (no project asked: such a host is not free for everyone);
- MISSING_TRAIT / FORBIDDEN_TRAIT: the request's ``required`` / ``!`` traits;
- ISOLATED_AGGREGATE: an aggregate of the host has ``trait:NAME=required`` metadata
  for a NAME the request does not require (``request_filter.isolate_aggregates``);
- AGGREGATE_MISMATCH: an ``aggregate_instance_extra_specs`` key the host's aggregates
  do not match (AggregateInstanceExtraSpecsFilter, with ``extra_specs_ops``).

An explicit request (amounts, no flavor) has no traits: rules 1-3 only.
"""

from __future__ import annotations

import dataclasses
import operator
from collections.abc import Callable, Iterator, Mapping
from enum import Enum

from gateway.domain.demand import Demand
from gateway.domain.records import Hypervisor

__all__ = ["HostFacts", "Reason", "first_reason", "host_facts", "matches_spec", "reasons"]


_DISABLED_TRAIT = "COMPUTE_STATUS_DISABLED"


class Reason(Enum):
    """Why the scheduler would not use a host; in the order they are checked."""

    NOT_READY = "NOT_READY"
    DISABLED = "DISABLED"
    PROJECT_RESTRICTED = "PROJECT_RESTRICTED"
    MISSING_TRAIT = "MISSING_TRAIT"
    FORBIDDEN_TRAIT = "FORBIDDEN_TRAIT"
    ISOLATED_AGGREGATE = "ISOLATED_AGGREGATE"
    AGGREGATE_MISMATCH = "AGGREGATE_MISMATCH"


@dataclasses.dataclass(frozen=True, slots=True)
class HostFacts:
    """What the rules read of one host, gathered once for all the requests judged."""

    ready: bool
    disabled: bool
    allowed_projects: frozenset[str]
    traits: frozenset[str]
    #: Traits its aggregates require of every request they take (isolated aggregates).
    isolating: frozenset[str]
    #: Aggregate metadata key -> every value its aggregates give it (comma lists split).
    metadata: Mapping[str, frozenset[str]]


def host_facts(hypervisor: Hypervisor) -> HostFacts:
    metadata: dict[str, set[str]] = {}
    for aggregate in hypervisor.aggregates:
        for key, value in aggregate.metadata.items():
            metadata.setdefault(key, set()).update(v.strip() for v in value.split(","))
    isolating = {
        key.removeprefix("trait:")
        for key, values in metadata.items()
        if key.startswith("trait:") and "required" in values
    }
    return HostFacts(
        ready=hypervisor.ready,
        disabled=bool(hypervisor.maintenance)
        or hypervisor.evicted is True
        or any(t.name == _DISABLED_TRAIT for t in hypervisor.traits),
        allowed_projects=frozenset(hypervisor.allowed_projects),
        traits=frozenset(t.name for t in hypervisor.traits),
        isolating=frozenset(isolating),
        metadata={key: frozenset(values) for key, values in metadata.items()},
    )


def reasons(facts: HostFacts, demand: Demand, project: str | None) -> Iterator[Reason]:
    """Every rule the host fails for ``demand`` asked by ``project``, in order."""
    if not facts.ready:
        yield Reason.NOT_READY
    if facts.disabled:
        yield Reason.DISABLED
    if facts.allowed_projects and project not in facts.allowed_projects:
        yield Reason.PROJECT_RESTRICTED
    if not demand.scheduled:
        return
    if not demand.required <= facts.traits:
        yield Reason.MISSING_TRAIT
    if demand.forbidden & facts.traits:
        yield Reason.FORBIDDEN_TRAIT
    if not facts.isolating <= demand.required:
        yield Reason.ISOLATED_AGGREGATE
    if not all(
        any(matches_spec(value, requirement) for value in facts.metadata.get(key, ()))
        for key, requirement in demand.aggregate_specs
    ):
        yield Reason.AGGREGATE_MISMATCH


def first_reason(facts: HostFacts, demand: Demand, project: str | None) -> Reason | None:
    """The reason a host is counted under; None: it is eligible."""
    return next(reasons(facts, demand, project), None)


def _numbers(compare: Callable[[float, float], bool]) -> Callable[[str, str], bool]:
    def judge(value: str, wanted: str) -> bool:
        try:
            return compare(float(value), float(wanted))
        except ValueError:  # not a number: no match, as no aggregate could satisfy it
            return False

    return judge


#: The operators of Nova's extra_specs_ops: "=" means at least, "s" compares strings.
_OPERATORS: dict[str, Callable[[str, str], bool]] = {
    "=": _numbers(operator.ge),
    "==": _numbers(operator.eq),
    "!=": _numbers(operator.ne),
    ">=": _numbers(operator.ge),
    "<=": _numbers(operator.le),
    "<in>": lambda value, wanted: wanted in value,
    "s==": operator.eq,
    "s!=": operator.ne,
    "s<": operator.lt,
    "s<=": operator.le,
    "s>": operator.gt,
    "s>=": operator.ge,
}


def matches_spec(value: str, requirement: str) -> bool:
    """Whether an aggregate's metadata ``value`` meets an extra spec's ``requirement``:
    plain text is equality, ``<or> a <or> b`` any of them, ``<all-in> a b`` all of them
    in the value, else ``OP operand``."""
    words = requirement.split()
    if not words:
        return value == requirement
    op, operands = words[0], words[1:]
    if op == "<or>":
        return value in operands[::2]
    if op == "<all-in>":
        return bool(operands) and all(word in value for word in operands)
    judge = _OPERATORS.get(op)
    if judge is None:
        return value == requirement
    return bool(operands) and judge(value, operands[0])
