"""The Kubernetes source: credentials, the list/watch informer and its parse pipeline."""

from __future__ import annotations

from gateway.sources.kubernetes.credentials import (
    KubeConfigError,
    load_client_config,
    reload_credentials,
    renewal,
)
from gateway.sources.kubernetes.informer import HypervisorInformer

__all__ = [
    "HypervisorInformer",
    "KubeConfigError",
    "load_client_config",
    "reload_credentials",
    "renewal",
]
