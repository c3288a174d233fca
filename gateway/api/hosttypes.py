"""GraphQL views of what the node agent and the operator report about a host beside its
capacity: libvirt's capabilities, the guest domain capabilities and the OS update.

Thin views of the records :mod:`gateway.domain.hostfacts` reads; null means "not reported".
"""

import strawberry

from gateway.api.scalars import Quantity

__all__ = ["DomainCapabilities", "HostCapabilities", "UpdateStatus"]


@strawberry.type(
    description=(
        "status.capabilities: the host as libvirt discovered it, summed over its NUMA cells. "
        "Physical facts, not schedulable capacity: see Hypervisor.resources for that."
    )
)
class HostCapabilities:
    cpu_arch: str | None = strawberry.field(
        description="The host's CPU architecture (not the guests'), e.g. x86_64."
    )
    cpus: Quantity | None = strawberry.field(
        description="Host cpus over all NUMA cells; null when not reported or unreadable."
    )
    memory: Quantity | None = strawberry.field(
        description="Host memory (bytes) over all NUMA cells; null when not reported or unreadable."
    )


@strawberry.type(description="status.domainCapabilities: what a guest domain on the host may use.")
class DomainCapabilities:
    arch: str | None = strawberry.field(description="The domains' cpu architecture.")
    hypervisor_type: str | None = strawberry.field(
        description='Type of virtualization for domains, e.g. "kvm" or "ch".'
    )
    supported_devices: list[str] = strawberry.field(
        description='Device types, with a model where given, e.g. "video/nvidia".'
    )
    supported_cpu_modes: list[str] = strawberry.field(
        description='CPU modes, with a submode where given, e.g. "host-passthrough/migratable".'
    )
    supported_features: list[str] = strawberry.field(description='Features, e.g. "sev" or "sgx".')


@strawberry.type(description="status.updateStatus: the operating system update on the host.")
class UpdateStatus:
    in_progress: bool | None = strawberry.field(
        description="An operating system update is running."
    )
    installed: str | None = strawberry.field(
        description="The operating system update version installed."
    )
    retry: int | None = strawberry.field(description="The update's number of retries.")
