"""Keeps the store equal to the cluster's Hypervisor objects: list once, then watch.

The protocol is client-go's reflector, because its corner cases are where caches
silently go stale:

* The first view is a paginated LIST; its resourceVersion is where the WATCH
  starts, so no change between the two is lost. A relist replaces the store in
  one step, which is also how deletions missed while disconnected disappear.
* Every event and bookmark moves the resume position forward, so a reconnect
  continues where the last one stopped instead of listing everything again.
* ``410 Gone`` means that position has been compacted away: only a relist helps.
  Every other failure is retried from the same position, with backoff.

The Kubernetes client's own ``Watch`` helper is not used: it retries ``410`` by
itself and hides reconnects, which are exactly the events this module must see.
"""

from __future__ import annotations

import asyncio
import collections
import json
import logging
import random
import time
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
from kubernetes.aio.client import ApiClient, Configuration, CustomObjectsApi

from gateway.bulk import collector_paused
from gateway.source import SyncStatus
from gateway.store import Prepared, Store

__all__ = ["Backoff", "HypervisorInformer"]

log = logging.getLogger(__name__)

GROUP, VERSION, PLURAL = "kvm.cloud.sap", "v1", "hypervisors"
RESOURCE = f"{PLURAL}.{GROUP}"
#: LIST pages fetched ahead of the parser.
_AHEAD = 2


class Backoff:
    """Exponential backoff with jitter, forgotten after a healthy period.

    The jitter spreads the reconnects of many gateway replicas after an API
    server restart; the reset makes a rare hiccup cost one short pause, not the
    long delay left over from an outage hours ago.
    """

    def __init__(self, initial: float = 0.8, cap: float = 30.0, reset_after: float = 60.0) -> None:
        self.initial, self.cap, self.reset_after = initial, cap, reset_after
        self._attempts = 0
        self._last_failure = float("-inf")

    def next_delay(self) -> float:
        now = time.monotonic()
        if now - self._last_failure > self.reset_after:
            self._attempts = 0
        self._last_failure = now
        delay = min(self.cap, self.initial * 2.0**self._attempts)
        self._attempts += 1
        return delay * random.uniform(0.75, 1.0)


class _Expired(Exception):
    """The resourceVersion (or continue token) is no longer available: relist."""


class _Unauthorized(Exception):
    """401/403: waiting helps only once someone fixes credentials or RBAC."""


class _ApiError(Exception):
    """Any other refusal by the API server; retried with backoff."""


class HypervisorInformer:
    """A :class:`~gateway.source.Source` fed by the Kubernetes API.

    ``page_size`` bounds each LIST response (memory on both ends, and the
    server's time per request). Raw pages are freed once parsed, but the records
    built meanwhile pin the memory they were interleaved with: at 5,000 hosts,
    pages of 250 leave the gateway 15 MiB smaller than pages of 500, and load as
    fast (pages of 100 are slower). ``watch_timeout`` is the range the server-side
    timeout is drawn from: randomized so replicas do not all reconnect at once,
    and finite so a connection is renewed even when nothing seems wrong.
    ``read_grace`` is added on the client side: the server closes first, and a
    connection that outlives both is dead and gets dropped.
    """

    def __init__(
        self,
        configuration: Configuration,
        *,
        page_size: int = 250,
        watch_timeout: tuple[int, int] = (300, 600),
        read_grace: float = 30.0,
        list_timeout: float = 60.0,
        backoff: Backoff | None = None,
        auth_retry: float = 30.0,
    ) -> None:
        self.status = SyncStatus(source="kubernetes")
        self._configuration = configuration
        self._page_size = page_size
        self._watch_timeout = watch_timeout
        self._read_grace = read_grace
        self._list_timeout = list_timeout
        self._backoff = backoff or Backoff()
        self._auth_retry = auth_retry
        #: Where the next watch resumes; None means a (re)list is needed.
        self._resource_version: str | None = None
        self._lists = 0
        self._watches = 0

    async def run(self, store: Store) -> None:
        async with ApiClient(configuration=self._configuration) as client:
            api = CustomObjectsApi(client)
            while True:
                try:
                    if self._resource_version is None:
                        await self._list(api, store)
                    await self._watch(api, store)
                except _Expired as error:
                    log.info("%s: %s; relisting", RESOURCE, error)
                    self._resource_version = None
                except _Unauthorized as error:
                    self.status.error = f"not authorized to list/watch {RESOURCE}: {error}"
                    self.status.synced = False
                    log.error("%s; retrying in %.0fs", self.status.error, self._auth_retry)
                    await asyncio.sleep(self._auth_retry)
                except (_ApiError, aiohttp.ClientError, TimeoutError, OSError, ValueError) as error:
                    await self._pause(error)
                except Exception as error:  # a bug here must not stop the cache for good
                    log.exception("unexpected error in the %s informer", RESOURCE)
                    await self._pause(error)

    async def _pause(self, error: BaseException) -> None:
        delay = self._backoff.next_delay()
        self.status.error = _describe(error)
        log.warning("%s: %s; retrying in %.1fs", RESOURCE, self.status.error, delay)
        await asyncio.sleep(delay)

    # -- LIST ----------------------------------------------------------------------

    async def _list(self, api: Any, store: Store) -> None:
        """Load every object page by page, then replace the store in one step.

        The first page is a consistent read (no resourceVersion); the continue
        token pins the remaining pages to the same snapshot, so together they are
        one point in time and the list's resourceVersion is a safe watch start.
        An expired token (410 mid-list) cannot be resumed consistently: start over.

        Each page is parsed in a worker thread while the next ones are fetched:
        the API server works while the gateway parses. At most ``_AHEAD`` pages of
        raw JSON objects (many times their records' size) wait for the parser, so
        memory stays bounded however large the fleet.
        """
        # Decoding and parsing a fleet builds millions of objects and no cycles: with
        # the collector running, its full passes over the growing heap would cost
        # more than the decoding itself (see gateway.bulk).
        with collector_paused():
            prepared, resource_version, count = await self._fetch_all(api, store)
        store.commit(prepared, resource_version)
        store.mark_ready()
        if self._lists:
            self.status.relists += 1
        self._lists += 1
        self._resource_version = resource_version
        self._connected(store)
        self.status.confirm()
        log.info("%s: listed %d objects at %s", RESOURCE, count, resource_version)

    async def _fetch_all(self, api: Any, store: Store) -> tuple[Prepared, str, int]:
        prepared = Prepared({}, {}, {})
        parsing: collections.deque[asyncio.Future[Prepared]] = collections.deque()
        token: str | None = None
        count = 0
        try:
            while True:
                response = await api.list_cluster_custom_object_without_preload_content(
                    GROUP,
                    VERSION,
                    PLURAL,
                    limit=self._page_size,
                    _continue=token,
                    _request_timeout=self._list_timeout,
                )
                async with response:
                    body = await _read_json(response)
                items = body.get("items") or []
                metadata = body.get("metadata") or {}
                token = metadata.get("continue") or None
                del body
                while len(parsing) >= _AHEAD:
                    prepared.absorb(await parsing.popleft())
                parsing.append(
                    asyncio.ensure_future(asyncio.to_thread(store.prepare, items, count))
                )
                count += len(items)
                del items
                if token is None:
                    break
            while parsing:
                prepared.absorb(await parsing.popleft())
        finally:
            for future in parsing:
                future.cancel()
        return prepared, str(metadata["resourceVersion"]), count

    # -- WATCH ---------------------------------------------------------------------

    async def _watch(self, api: Any, store: Store) -> None:
        """Follow changes from the resume position until the server ends the stream."""
        timeout = random.randint(*self._watch_timeout)
        started, events = time.monotonic(), 0
        if self._watches:
            self.status.watch_restarts += 1
        self._watches += 1
        response = await api.list_cluster_custom_object_without_preload_content(
            GROUP,
            VERSION,
            PLURAL,
            watch=True,
            resource_version=self._resource_version,
            # Bookmarks carry only a newer resourceVersion. They keep the resume
            # position current while nothing changes, so a reconnect after a quiet
            # hour does not start from a compacted version and force a relist.
            allow_watch_bookmarks=True,
            timeout_seconds=timeout,
            # The server ends the watch after ``timeout``; the client gives up a
            # little later, so a connection that died silently cannot hang forever.
            _request_timeout=timeout + self._read_grace,
        )
        async with response:
            if response.status != 200:
                await _read_json(response)  # raises the matching error
            self._connected(store)
            async for line in _lines(response.content):
                self._apply(json.loads(line), store)
                events += 1
        # A stream that ends at once, empty, is a failure in disguise (a proxy
        # closing connections, say); reconnecting immediately would spin.
        if events == 0 and time.monotonic() - started < 1.0:
            raise _ApiError("watch closed immediately without any event")

    def _apply(self, event: Any, store: Store) -> None:
        kind, obj = event.get("type"), event.get("object") or {}
        if kind == "ERROR":
            # The server reports watch failures in-band, after the 200 headers.
            # Code 410 is the compacted-resourceVersion case; everything else is
            # retried from the same position.
            _raise_status(obj)
        metadata = obj.get("metadata") or {}
        # resourceVersions are opaque strings: never compare or do arithmetic on them.
        resource_version = metadata.get("resourceVersion")
        if kind in ("ADDED", "MODIFIED"):
            store.upsert(obj, resource_version)
        elif kind == "DELETED":
            store.delete(str(metadata.get("name")), resource_version)
        elif kind == "BOOKMARK":
            store.advance(str(resource_version))
        else:
            log.warning("%s: ignoring watch event of type %r", RESOURCE, kind)
            return
        self.status.events[kind] += 1
        if resource_version:
            self._resource_version = str(resource_version)
        self.status.parse_failures = len(store.rejected)
        self.status.confirm(event=kind != "BOOKMARK")

    def _connected(self, store: Store) -> None:
        """The server accepted a request: whatever went wrong before is over."""
        self.status.synced = store.ready
        self.status.error = None
        self.status.parse_failures = len(store.rejected)


def _describe(error: BaseException) -> str:
    if isinstance(error, _ApiError):
        return str(error)
    return f"{type(error).__name__}: {error}".rstrip(": ")


async def _lines(stream: aiohttp.StreamReader) -> AsyncIterator[bytes]:
    """Split the chunked watch stream into JSON lines, however large an object is.

    ``StreamReader.readline`` fails on a line longer than the reader's high-water
    mark, a setting of the HTTP session (128 KiB by aiohttp's default), and a
    Hypervisor with thousands of bookings reaches a megabyte; so lines are joined
    here, whatever the session's settings.
    """
    pending = bytearray()
    async for chunk in stream.iter_any():
        start = 0
        while (end := chunk.find(b"\n", start)) >= 0:
            pending += chunk[start:end]
            if pending.strip():
                yield bytes(pending)
            pending.clear()
            start = end + 1
        pending += chunk[start:]
    if pending.strip():
        yield bytes(pending)


async def _read_json(response: aiohttp.ClientResponse) -> dict[str, Any]:
    """The response body as JSON; a non-2xx answer raises the matching error."""
    raw = await response.read()
    if response.status >= 300:
        try:
            status = json.loads(raw)
        except ValueError:  # not from the API server itself (a proxy, a load balancer)
            status = {"message": raw[:200].decode(errors="replace")}
        _raise_status(status if isinstance(status, dict) else {}, response.status)
    body = json.loads(raw)
    if not isinstance(body, dict):
        raise _ApiError(f"expected a JSON object, got {type(body).__name__}")
    return body


def _raise_status(status: Any, http_status: int | None = None) -> None:
    """Raise the error a ``Status`` object (or a bare HTTP status) stands for."""
    code = http_status or status.get("code")
    message = f"HTTP {code} {status.get('reason') or ''}: {status.get('message') or ''}"
    if code == 410:
        raise _Expired(message)
    if code in (401, 403):
        raise _Unauthorized(message)
    # A resourceVersion newer than the server's (etcd restored from a backup)
    # can never be served either; client-go relists in this case too.
    causes = (status.get("details") or {}).get("causes") or ()
    if code == 504 and any(c.get("reason") == "ResourceVersionTooLarge" for c in causes):
        raise _Expired(message)
    raise _ApiError(message)
