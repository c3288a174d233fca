"""Facts the node agent and the operator report about a host, beside its capacity.

``status.capabilities``, ``status.domainCapabilities`` and ``status.updateStatus``
are in the operator's released CRD. Each is read leniently, like the rest of an
object: a wrong type is a warning, and an absent block is None (not reported),
never an empty record that would read as "no cpus". The hosts of one kind of
hardware report the same facts: each spelling is parsed once, and its record shared.
"""

from __future__ import annotations

from typing import Any

from gateway.domain.lenient import Reader, shared_string
from gateway.domain.memo import by_spelling
from gateway.domain.records import Capabilities, DomainCapabilities, UpdateStatus

__all__ = ["capabilities", "domain_capabilities", "update_status"]


@by_spelling
def capabilities(p: Reader, value: Any) -> Capabilities | None:
    """status.capabilities; cpus and memory are quantities (a bad one is warned about)."""
    if value is None:
        return None
    body = p.mapping(value, "status.capabilities")
    sizes = p.amounts(
        {k: body[k] for k in ("cpus", "memory") if body.get(k) is not None}, "status.capabilities"
    )
    return Capabilities(
        cpu_arch=p.shared(body.get("cpuArch"), "status.capabilities.cpuArch"),
        cpus=sizes.get("cpus"),
        memory=sizes.get("memory"),
    )


@by_spelling
def domain_capabilities(p: Reader, value: Any) -> DomainCapabilities | None:
    if value is None:
        return None
    path = "status.domainCapabilities"
    body = p.mapping(value, path)
    lists = {
        key: tuple(shared_string(s) for s in p.strings(body.get(key), f"{path}.{key}"))
        for key in ("supportedDevices", "supportedCpuModes", "supportedFeatures")
    }
    return DomainCapabilities(
        arch=p.shared(body.get("arch"), f"{path}.arch"),
        hypervisor_type=p.shared(body.get("hypervisorType"), f"{path}.hypervisorType"),
        supported_devices=lists["supportedDevices"],
        supported_cpu_modes=lists["supportedCpuModes"],
        supported_features=lists["supportedFeatures"],
    )


def update_status(p: Reader, value: Any) -> UpdateStatus | None:
    if value is None:
        return None
    path = "status.updateStatus"
    body = p.mapping(value, path)
    return UpdateStatus(
        in_progress=p.boolean(body.get("inProgress"), f"{path}.inProgress"),
        installed=p.shared(body.get("installed"), f"{path}.installed"),
        retry=p.integer(body.get("retry"), f"{path}.retry"),
    )
