"""The flavor catalog: the instance sizes whose slots a capacity planner asks about.

A catalog file (``serve --flavors FILE``, YAML or JSON) lists flavors as
``openstack flavor show -f json`` gives them: ``name``, ``vcpus``, ``ram`` (MiB),
``disk`` (GB) and ``properties`` (or ``extra_specs``: a map, or the client's
``key='value', ...`` text). The file is a list, or a map with a ``flavors`` list;
keys are read case-insensitively, so ``openstack flavor list --long -f json``
output works as it is.

What a flavor requests is built as Nova builds it (:mod:`gateway.domain.demand`):
resources with ``PCPU`` where the CPUs are pinned, required and forbidden traits,
aggregate extra specs. ``disk`` is shown but not requested: no node agent reports a
DISK_GB capacity, so requesting it would make every host unknown. A flavor that
must count its disk says so with ``resources:DISK_GB``. A flavor with granular
groups is loaded and reported as not judged, with the reason.

A malformed catalog is rejected as a whole with the reason (:class:`FlavorError`),
never loaded in part or as an empty catalog.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Mapping
from importlib import resources as package_files
from pathlib import Path
from typing import Any

import yaml

from gateway.domain.demand import Demand, DemandError, flavor_demand
from gateway.domain.lenient import INT_MAX
from gateway.domain.records import Amounts

__all__ = [
    "DEMO_CATALOG",
    "NO_CATALOG",
    "Catalog",
    "Flavor",
    "FlavorError",
    "load_catalog",
    "parse_catalog",
]

#: The demo's catalog: general (g), compute (c) and memory (m) families, 1 to 64 vCPU.
DEMO_CATALOG = "demo-flavors.yaml"
_TEXT_PROPERTY = re.compile(r"\s*([^=,'\s]+)='([^']*)'\s*")
_TEXT_PROPERTIES = re.compile(r"\s*[^=,'\s]+='[^']*'\s*(?:,\s*[^=,'\s]+='[^']*'\s*)*")


class FlavorError(ValueError):
    """A catalog that cannot be used; the message names the file, flavor and field."""


@dataclasses.dataclass(frozen=True, slots=True)
class Flavor:
    name: str
    vcpus: int
    ram_mib: int
    disk_gb: int | None
    extra_specs: Mapping[str, str] = dataclasses.field(hash=False)
    #: What one instance asks of a host, as Nova sends it to Placement.
    demand: Demand

    @property
    def resources(self) -> Amounts:
        """What one instance requests, in base units: the amounts slots divide by."""
        return self.demand.amounts


@dataclasses.dataclass(frozen=True, slots=True)
class Catalog:
    flavors: tuple[Flavor, ...]

    def get(self, name: str) -> Flavor | None:
        return next((f for f in self.flavors if f.name == name), None)


#: No catalog loaded: slots(flavor:) then says how to load one.
NO_CATALOG = Catalog(())


def load_catalog(path: Path | None) -> Catalog:
    """The catalog in ``path``; None: the demo's, shipped with the package."""
    if path is None:
        text = package_files.files("gateway").joinpath(DEMO_CATALOG).read_text("utf-8")
        return parse_catalog(yaml.safe_load(text), DEMO_CATALOG)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise FlavorError(f"--flavors {path}: cannot read it ({error})") from error
    try:
        data = json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
    except (ValueError, yaml.YAMLError) as error:
        raise FlavorError(f"--flavors {path}: not valid JSON or YAML ({error})") from error
    return parse_catalog(data, f"--flavors {path}")


def parse_catalog(data: Any, source: str) -> Catalog:
    """Validate a loaded catalog document; raises FlavorError naming ``source``."""
    if isinstance(data, Mapping) and set(data) == {"flavors"}:
        data = data["flavors"]
    if not isinstance(data, list) or not data:
        raise FlavorError(f"{source}: expected a non-empty list of flavors (or flavors: [...])")
    flavors: list[Flavor] = []
    for index, entry in enumerate(data):
        try:
            flavor = _flavor(entry)
        except FlavorError as error:
            raise FlavorError(f"{source}: flavor {index + 1}: {error}") from None
        if any(f.name == flavor.name for f in flavors):
            raise FlavorError(f"{source}: flavor {flavor.name!r} is listed twice")
        flavors.append(flavor)
    return Catalog(tuple(flavors))


def _flavor(entry: Any) -> Flavor:
    if not isinstance(entry, Mapping) or not all(isinstance(k, str) for k in entry):
        raise FlavorError("expected a map with name, vcpus and ram")
    fields = {k.lower(): v for k, v in entry.items()}
    name = fields.get("name")
    if not isinstance(name, str) or not name.strip():
        raise FlavorError("name: expected a non-empty string")
    try:
        vcpus = _count(fields.get("vcpus"), "vcpus", minimum=1)
        ram = _count(fields.get("ram"), "ram", minimum=1)
        disk = None if fields.get("disk") is None else _count(fields["disk"], "disk", minimum=0)
        specs = _specs(fields.get("properties", fields.get("extra_specs")))
        demand = flavor_demand(vcpus, ram, specs)
    except (FlavorError, DemandError) as error:
        raise FlavorError(f"{name}: {error}") from None
    return Flavor(name, vcpus, ram, disk, specs, demand)


def _count(value: Any, field: str, *, minimum: int) -> int:
    """A whole number: an integer, or a string of digits (as extra specs are)."""
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise FlavorError(f"{field}: expected a whole number >= {minimum}, got {value!r}")
    if value > INT_MAX:
        raise FlavorError(f"{field}: {value} is beyond the 32-bit integers the API shows")
    return value


def _specs(value: Any) -> dict[str, str]:
    """Extra specs as a map of strings; the client's ``key='value', ...`` text too."""
    if value is None or value == "":
        return {}
    if isinstance(value, str):
        if not _TEXT_PROPERTIES.fullmatch(value):
            raise FlavorError(f"properties: cannot read {value!r} (expected key='value', ...)")
        return dict(_TEXT_PROPERTY.findall(value))
    if not isinstance(value, Mapping):
        raise FlavorError("properties: expected a map of extra specs")
    specs = {}
    for key, spec in value.items():
        if not isinstance(key, str) or isinstance(spec, (Mapping, list)) or spec is None:
            raise FlavorError(f"properties: {key!r}: expected a plain value")
        specs[key] = str(spec).lower() if isinstance(spec, bool) else str(spec)
    return specs
