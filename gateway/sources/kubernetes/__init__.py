"""The Kubernetes source: credentials, the list/watch informers and their parse pipeline."""

from __future__ import annotations

from gateway.sources.kubernetes.cluster import ClusterSource
from gateway.sources.kubernetes.credentials import (
    KubeConfigError,
    load_client_config,
    reload_credentials,
    renewal,
)
from gateway.sources.kubernetes.evictions import EvictionInformer
from gateway.sources.kubernetes.informer import HypervisorInformer

__all__ = [
    "ClusterSource",
    "EvictionInformer",
    "HypervisorInformer",
    "KubeConfigError",
    "load_client_config",
    "reload_credentials",
    "renewal",
]
