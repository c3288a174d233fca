"""hypervisor-gateway: a GraphQL gateway over Hypervisor custom resources."""

__version__ = "0.1.0"
