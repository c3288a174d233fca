"""What feeds the store: Kubernetes (an informer), files, or a demo fleet.

Each implements :class:`gateway.store.Source` and imports only :mod:`gateway.store`
and :mod:`gateway.domain`, never the API or HTTP layers. Only the file source is
re-exported here; the demo and Kubernetes sources are subpackages with surfaces
of their own, so ``--demo`` never loads the Kubernetes client.
"""

from __future__ import annotations

from gateway.sources.files import FileSource, FileSourceError

__all__ = ["FileSource", "FileSourceError"]
