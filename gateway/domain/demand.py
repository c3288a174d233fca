"""What a flavor asks of a host, as Nova turns it into a Placement request (domain
brief, section 8).

A slot is an instance the scheduler could actually place, so the request is built
the way Nova builds it (``nova/scheduler/utils.py``, ``ResourceRequest``):

- ``vcpus`` -> ``cpu`` (VCPU), ``ram`` MiB -> ``memory`` in bytes (MEMORY_MB);
- ``hw:cpu_policy=dedicated`` asks for the vCPUs as ``PCPU`` (pinned cores) and no
  ``cpu``; ``mixed`` asks for the CPUs of ``hw:cpu_dedicated_mask`` (or, with
  ``hw:cpu_realtime=yes``, of ``hw:cpu_realtime_mask``) as ``PCPU`` and the rest as
  ``cpu``; either way ``hw:emulator_threads_policy=isolate`` adds one ``PCPU``;
- ``hw:cpu_thread_policy=isolate`` forbids the trait HW_CPU_HYPERTHREADING,
  ``require`` requires it;
- ``resources:CLASS=N`` sets CLASS (VCPU and MEMORY_MB are ``cpu`` and ``memory``),
  N = 0 removes it; an explicit VCPU or PCPU replaces the amounts derived from vcpus;
- ``trait:NAME=required`` / ``forbidden``;
- ``aggregate_instance_extra_specs:KEY=VALUE``: an aggregate of the host must have
  metadata KEY matching VALUE (Nova's AggregateInstanceExtraSpecsFilter).

Granular groups (``resourcesN:``, ``traitN:``) span several providers, which the
gateway's one-host-at-a-time slots cannot judge: such a request is built from its
unsuffixed part and says why it is not judged, never counted as if un-granular.
``disk`` is not requested (no node agent reports DISK_GB): ``resources:DISK_GB`` does.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator, Mapping
from decimal import Decimal

from gateway.domain.records import Amounts

__all__ = ["Demand", "DemandError", "flavor_demand", "parse_cpu_spec"]

MEBIBYTE = 2**20
_RESOURCE = re.compile(r"resources([a-zA-Z0-9_-]{1,64})?:(.*)")
_TRAIT = re.compile(r"trait([a-zA-Z0-9_-]{1,64})?:(.*)")
_AGGREGATE_SCOPE = "aggregate_instance_extra_specs:"
_RENAMED = {"VCPU": "cpu", "MEMORY_MB": "memory"}
_POLICIES = ("shared", "dedicated", "mixed")
_THREAD_TRAITS = {"isolate": "forbidden", "require": "required", "prefer": None}
_HYPERTHREADING = "HW_CPU_HYPERTHREADING"


class DemandError(ValueError):
    """Extra specs Nova's API would refuse; the message names the spec."""


@dataclasses.dataclass(frozen=True, slots=True)
class Demand:
    """One instance's request: amounts in base units, traits and aggregate specs.

    Hashable, so that the slot sums kept per change can be named by it.
    """

    resources: tuple[tuple[str, Decimal], ...]
    required: frozenset[str] = frozenset()
    forbidden: frozenset[str] = frozenset()
    #: (metadata key, requirement) pairs an aggregate of the host must match.
    aggregate_specs: tuple[tuple[str, str], ...] = ()
    #: False for an explicit request (amounts only): only readiness, the compute
    #: service and the project decide where it may go (section 8).
    scheduled: bool = True
    #: Why the scheduler's answer cannot be judged host by host; None: it can.
    unjudged: str | None = None

    @classmethod
    def of_amounts(cls, amounts: Amounts) -> Demand:
        """An explicit request: these amounts, no traits."""
        return cls(tuple(sorted(amounts.items())), scheduled=False)

    @property
    def amounts(self) -> dict[str, Decimal]:
        return dict(self.resources)


def flavor_demand(vcpus: int, ram_mib: int, specs: Mapping[str, str]) -> Demand:
    """The request Nova sends for a flavor; raises DemandError for specs Nova refuses."""
    requested: dict[str, int] = {"cpu": vcpus, "memory": ram_mib * MEBIBYTE}
    requested.update(_pinning(vcpus, specs))
    traits: dict[str, set[str]] = {"required": set(), "forbidden": set()}
    if (thread_trait := _thread_policy(specs)) is not None:
        traits[thread_trait].add(_HYPERTHREADING)
    granular: list[str] = []
    explicit: dict[str, int] = {}
    for key, value in specs.items():
        if match := _RESOURCE.fullmatch(key):
            group, resource_class = match.groups()
            if group:
                granular.append(key)
            elif not resource_class:
                raise DemandError(f"{key}: no resource class")
            else:
                explicit[_RENAMED.get(resource_class, resource_class)] = _amount(key, value)
        elif match := _TRAIT.fullmatch(key):
            group, name = match.groups()
            if group:
                granular.append(key)
            elif value not in traits or not name:
                raise DemandError(f"{key}={value!r}: expected a trait name = required or forbidden")
            else:
                traits[value].add(name)
    if "cpu" in explicit or "PCPU" in explicit:
        requested.pop("cpu", None)
        requested.pop("PCPU", None)
    requested.update({name: amount * _scale(name) for name, amount in explicit.items()})
    both = traits["required"] & traits["forbidden"]
    if both:
        raise DemandError(f"traits both required and forbidden: {', '.join(sorted(both))}")
    resources = tuple((n, Decimal(a)) for n, a in sorted(requested.items()) if a)
    if not resources:
        raise DemandError("requests no resource at all")
    return Demand(
        resources,
        frozenset(traits["required"]),
        frozenset(traits["forbidden"]),
        tuple(sorted(_aggregate_specs(specs))),
        unjudged=_granular_reason(granular),
    )


def _pinning(vcpus: int, specs: Mapping[str, str]) -> dict[str, int]:
    """cpu and PCPU as hw:cpu_policy asks for them (Nova's _translate_pinning_policies)."""
    policy = specs.get("hw:cpu_policy")
    if policy is None or policy == "shared":
        return {}
    if policy not in _POLICIES:
        raise DemandError(f"hw:cpu_policy={policy!r}: expected one of {', '.join(_POLICIES)}")
    pinned = vcpus if policy == "dedicated" else len(_mixed_cpus(vcpus, specs))
    emulator = 1 if specs.get("hw:emulator_threads_policy") == "isolate" else 0
    return {"cpu": vcpus - pinned, "PCPU": pinned + emulator}


def _mixed_cpus(vcpus: int, specs: Mapping[str, str]) -> set[int]:
    """The pinned CPUs of a mixed instance: the dedicated mask, else the realtime one."""
    key = "hw:cpu_dedicated_mask"
    if not specs.get(key) and specs.get("hw:cpu_realtime", "").lower() in ("yes", "true", "1"):
        key = "hw:cpu_realtime_mask"
    mask = specs.get(key, "").strip()
    if not mask:
        raise DemandError("hw:cpu_policy=mixed needs hw:cpu_dedicated_mask")
    spec = f"0-{vcpus - 1},{mask}" if mask.startswith("^") else mask
    pinned = parse_cpu_spec(spec, key)
    if not pinned or not pinned < set(range(vcpus)):
        raise DemandError(f"{key}={mask!r}: must pin some but not all of the {vcpus} vCPUs")
    return pinned


def _thread_policy(specs: Mapping[str, str]) -> str | None:
    policy = specs.get("hw:cpu_thread_policy")
    if policy is None:
        return None
    if policy not in _THREAD_TRAITS:
        raise DemandError(f"hw:cpu_thread_policy={policy!r}: expected prefer, isolate or require")
    return _THREAD_TRAITS[policy]


def parse_cpu_spec(spec: str, key: str = "cpu spec") -> set[int]:
    """A CPU set such as ``"0-3,^2,6"``: ranges and single CPUs, ``^`` excluding."""
    included: set[int] = set()
    excluded: set[int] = set()
    for rule in filter(None, (part.strip() for part in spec.split(","))):
        chosen = excluded if rule.startswith("^") else included
        first, _, last = rule.removeprefix("^").partition("-")
        try:
            start, end = int(first), int(last or first)
        except ValueError:
            raise DemandError(f"{key}: cannot read {rule!r}") from None
        if start > end:
            raise DemandError(f"{key}: {rule!r} is an empty range")
        chosen.update(range(start, end + 1))
    return included - excluded


def _aggregate_specs(specs: Mapping[str, str]) -> Iterator[tuple[str, str]]:
    for key, value in specs.items():
        if key.startswith(_AGGREGATE_SCOPE):
            yield key.removeprefix(_AGGREGATE_SCOPE), value


def _amount(key: str, value: str) -> int:
    text = value.strip()
    if not text.isdigit():
        raise DemandError(f"{key}: expected a whole number >= 0, got {value!r}")
    return int(text)


def _scale(name: str) -> int:
    return MEBIBYTE if name == "memory" else 1


def _granular_reason(keys: list[str]) -> str | None:
    if not keys:
        return None
    return (
        f"granular request groups ({', '.join(sorted(keys))}) may be satisfied by several "
        "resource providers together, which per-host slots cannot judge"
    )
