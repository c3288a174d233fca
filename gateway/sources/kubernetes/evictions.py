"""The operator's evictions, from the cluster: a second informer, on ``evictions``.

The same engine as the Hypervisors' (gateway.sources.kubernetes.informer), into
the :class:`~gateway.store.evictions.EvictionStore`. What differs is what a failure
means. A cluster whose operator predates evictions has no Eviction CRD, so the
collection answers 404: the gateway serves its Hypervisors all the same, and
evictions are *unavailable* (not "none"), with the reason, until the CRD is
installed; the informer keeps asking, with backoff, and then lists them. So does
a cluster whose RBAC does not let the gateway read them yet.
"""

from __future__ import annotations

from gateway.domain.evictions import PLURAL
from gateway.domain.records import GROUP
from gateway.sources.kubernetes.errors import NotFound
from gateway.sources.kubernetes.informer import Informer, collection_path
from gateway.store.evictions import EvictionStore

__all__ = ["EvictionInformer"]


class EvictionInformer(Informer[EvictionStore]):
    """Lists and watches ``evictions.kvm.cloud.sap`` into an :class:`EvictionStore`."""

    resource = f"{PLURAL}.{GROUP}"
    path = collection_path(PLURAL)

    def _failed(self, store: EvictionStore, error: BaseException) -> None:
        """No CRD: evictions are unavailable (those held went with it). Any failure
        before the first complete view: they stay unavailable, and say why.

        Once listed, other failures leave the evictions as they were, as the
        Hypervisors are left: the last complete view, kept while the watch heals.
        """
        if isinstance(error, NotFound):
            store.absent(f"the cluster does not serve {self.resource} (no Eviction CRD)")
        elif not store.ready:
            store.absent(f"{self.resource} could not be listed: {self.status.error}")
