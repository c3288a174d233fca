"""Where the Kubernetes credentials come from.

The lookup order is controller-runtime's, which is what operators in the same
cluster use: an explicit kubeconfig path, then ``$KUBECONFIG``, then the pod's
service account (in-cluster), then ``~/.kube/config``. Failing all of them is an
error that says what was tried, not a silent fallback to ``localhost``.
"""

from __future__ import annotations

import os
from pathlib import Path

from kubernetes.aio import config as kube_config
from kubernetes.aio.client import Configuration

__all__ = ["KubeConfigError", "load_client_config", "reload_credentials"]

DEFAULT_KUBECONFIG = Path("~/.kube/config")


class KubeConfigError(RuntimeError):
    """No usable Kubernetes configuration; the message names what was tried."""


async def load_client_config(
    kubeconfig: str | None = None, context: str | None = None
) -> Configuration:
    """Build a client configuration (server, CA, credentials) without touching globals.

    ``context`` selects a kubeconfig context; it makes no sense in-cluster, so
    asking for one without any kubeconfig is an error rather than ignored.
    """
    path = kubeconfig or os.environ.get("KUBECONFIG") or None
    if path is None and _in_cluster():
        if context is not None:
            raise KubeConfigError(f"--context {context!r} given, but no kubeconfig was found")
        return _in_cluster_config()
    path = path or _default_kubeconfig()
    if path is None:
        raise KubeConfigError(
            "no Kubernetes configuration: pass --kubeconfig, set KUBECONFIG, run in a pod "
            f"with a service account, or create {DEFAULT_KUBECONFIG}"
        )
    configuration = Configuration()
    try:
        # persist_config=False: never write refreshed tokens back into the user's file.
        await kube_config.load_kube_config(  # type: ignore[no-untyped-call]
            config_file=path,
            context=context,
            client_configuration=configuration,
            persist_config=False,
        )
    except (kube_config.ConfigException, OSError, ValueError) as error:
        raise KubeConfigError(f"cannot use kubeconfig {path}: {error}") from error
    return configuration


async def reload_credentials(
    configuration: Configuration, kubeconfig: str | None = None, context: str | None = None
) -> None:
    """Load the credentials again, into ``configuration`` in place.

    Tokens from an exec plugin or an OIDC provider expire, and a kubeconfig
    mounted from a Secret gets rotated; the loader runs the plugin (or refreshes
    the token, or reads the file) anew. Only the bearer token is replaced: a new
    client certificate takes a restart, as the client builds its TLS context once.
    """
    fresh = await load_client_config(kubeconfig, context)
    configuration.api_key = fresh.api_key


def _default_kubeconfig() -> str | None:
    path = DEFAULT_KUBECONFIG.expanduser()
    return str(path) if path.exists() else None


def _in_cluster() -> bool:
    return bool(os.environ.get("KUBERNETES_SERVICE_HOST"))


def _in_cluster_config() -> Configuration:
    configuration = Configuration()
    try:
        # The loader re-reads the projected token before it expires, so rotated
        # service-account tokens keep working without a restart.
        kube_config.load_incluster_config(client_configuration=configuration)  # type: ignore[no-untyped-call]
    except kube_config.ConfigException as error:
        raise KubeConfigError(f"in-cluster configuration unusable: {error}") from error
    return configuration
