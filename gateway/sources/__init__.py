"""What feeds the store: Kubernetes (an informer), files, or a demo fleet.

Each implements :class:`gateway.store.Source` and imports only :mod:`gateway.store`
and :mod:`gateway.domain`, never the API or HTTP layers. Nothing is re-exported
here: the CLI imports the one it runs by its module, so ``--demo`` never loads
the Kubernetes client.
"""
