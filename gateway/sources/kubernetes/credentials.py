"""Where the Kubernetes credentials come from.

The lookup order is controller-runtime's, which is what operators in the same
cluster use: an explicit kubeconfig path, then ``$KUBECONFIG``, then the pod's
service account (in-cluster), then ``~/.kube/config``. Failing all of them is an
error that says what was tried, not a silent fallback to ``localhost``.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable
from pathlib import Path

from kubernetes.aio import config as kube_config
from kubernetes.aio.client import ApiClient, Configuration, rest

__all__ = [
    "KubeConfigError",
    "client_certificate",
    "load_client_config",
    "present_current_certificate",
    "reload_credentials",
    "renewal",
]

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
    the token, or reads the file) anew. A client reads the token per request;
    a new client certificate needs :func:`present_current_certificate`.
    """
    fresh = await load_client_config(kubeconfig, context)
    configuration.api_key = fresh.api_key
    configuration.cert_file, configuration.key_file = fresh.cert_file, fresh.key_file


def client_certificate(configuration: Configuration) -> bytes:
    """The client certificate and key a client built now would present (empty for none).

    By content, not by name: a file rotated in place keeps its name (inline data
    and a plugin's certificate get a file named anew by the loader).
    """
    parts = []
    for path in (configuration.cert_file, configuration.key_file):
        if path:
            try:
                parts.append(Path(path).read_bytes())
            except OSError as error:  # mid-rotation; building a client will say so
                parts.append(f"unreadable: {error}".encode())
    return b"\0".join(parts)


async def present_current_certificate(api: ApiClient, presented: bytes) -> bytes:
    """Renew ``api``'s TLS context if its client certificate is no longer ``presented``.

    A client loads its certificate into the TLS context once, when it is built,
    so a rotated one reaches the API server only through a new context (and a
    new connection pool: open connections keep the old handshake). Returns the
    certificate presented from now on; raises OSError if it cannot be loaded,
    and then ``api`` stays as it was.
    """
    current = client_certificate(api.configuration)
    if current != presented:
        stale = api.rest_client
        api.rest_client = rest.RESTClientObject(api.configuration)
        await stale.close()
    return current


def renewal(
    api: ApiClient, kubeconfig: str | None = None, context: str | None = None
) -> Callable[[], Awaitable[None]]:
    """What loads ``api``'s credentials again when the server refuses them.

    A long-lived client (the authorizer's) needs both halves: a fresh token from
    :func:`reload_credentials` and, for a rotated certificate, a new TLS context
    from :func:`present_current_certificate`. Its owner gets them as one callback
    and never imports this module.
    """
    presented = client_certificate(api.configuration)

    async def renew() -> None:
        nonlocal presented
        await reload_credentials(api.configuration, kubeconfig, context)
        presented = await present_current_certificate(api, presented)

    return renew


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
