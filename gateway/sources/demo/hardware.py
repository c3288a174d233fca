"""What the demo's hosts are built of and what they run: hardware models and instance sizes.

Each kind of host runs its own sizes (general-purpose, HANA, pinned), repeated by
popularity so that one random index picks one.
"""

from __future__ import annotations

import dataclasses

__all__ = ["GENERAL", "HANA", "HARDWARE", "OVERBOOKING", "PINNED", "Flavor", "GiB", "Hardware"]

GiB = 2**30


@dataclasses.dataclass(frozen=True, slots=True)
class Hardware:
    vendor: str
    model: str
    cores: int
    memory_gib: int
    cells: int
    hana: bool
    traits: tuple[str, ...]


HARDWARE = (
    Hardware("Lenovo", "ThinkSystem SR650", 64, 512, 2, False, ("HW_CPU_X86_AVX2",)),
    Hardware("Dell Inc.", "PowerEdge R750", 96, 1024, 2, False, ("HW_CPU_X86_AVX512F",)),
    Hardware("Lenovo", "ThinkSystem SR650 V3", 128, 1536, 2, False, ("HW_CPU_X86_AVX512F",)),
    Hardware("Dell Inc.", "PowerEdge R760", 192, 2048, 2, False, ("HW_CPU_X86_AMX_TILE",)),
    Hardware("Lenovo", "ThinkSystem SR950", 224, 3072, 4, True, ("HW_CPU_X86_AVX512F",)),
    Hardware("Lenovo", "ThinkSystem SR950 V3", 256, 4096, 4, True, ("HW_CPU_X86_AMX_TILE",)),
)


@dataclasses.dataclass(frozen=True, slots=True)
class Flavor:
    """A Nova flavor, with its booking amounts formatted once rather than per booking."""

    vcpus: int
    gib: int
    #: hw:cpu_policy=dedicated: Placement books its vCPUs as PCPU, not VCPU.
    pinned: bool = False

    @property
    def resource(self) -> str:
        return "PCPU" if self.pinned else "cpu"

    def resources(self, mebibytes: bool) -> dict[str, str]:
        memory = _MIB[self.gib] if mebibytes else _GIB[self.gib]
        return {self.resource: _TEXT[self.vcpus], "memory": memory}


def _flavors(*popularity: tuple[int, int, int], pinned: bool = False) -> tuple[Flavor, ...]:
    """Flavors repeated by popularity, so that one random index picks one."""
    return tuple(
        Flavor(vcpus, gib, pinned) for vcpus, gib, times in popularity for _ in range(times)
    )


GENERAL = _flavors(
    (2, 4, 6), (2, 8, 5), (4, 8, 5), (4, 16, 5), (8, 16, 3), (8, 32, 4), (16, 64, 2),
    (16, 128, 1), (32, 128, 1), (32, 256, 1),
)  # fmt: skip
HANA = _flavors((2, 32, 2), (4, 64, 3), (8, 128, 3), (16, 256, 2), (32, 512, 2), (64, 1024, 1))
#: Pinned hosts run mostly the catalog's p_ family, and a few small shared instances.
PINNED = _flavors((2, 4, 4), (2, 8, 4), (4, 16, 2)) + _flavors(
    (2, 8, 5), (4, 16, 5), (8, 32, 3), (16, 64, 2), (32, 128, 1), pinned=True
)
OVERBOOKING = Flavor(16, 64)
_AMOUNTS = {n for f in (*GENERAL, *HANA, *PINNED) for n in (f.vcpus, f.gib)}
_TEXT = {n: str(n) for n in _AMOUNTS}
_GIB = {n: f"{n}Gi" for n in _AMOUNTS}
_MIB = {n: f"{n * 1024}Mi" for n in _AMOUNTS}
