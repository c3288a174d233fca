"""Keeps a store equal to the cluster's objects of one resource: list once, then watch.

The protocol is client-go's reflector, because its corner cases are where caches
silently go stale:

* The first view is the whole collection at one resourceVersion, where the watch
  continues, so no change between the two is lost. A relist replaces the store in
  one step, which is also how deletions missed while disconnected disappear.
* That first view is streamed when the server can (a watch with
  ``sendInitialEvents``, KEP-3157): the API server sends every object from its
  watch cache as an event, marks the end with a bookmark, and the same stream
  goes on as the watch. Otherwise it is a paginated LIST.
* Every event and bookmark moves the resume position forward, so a reconnect
  continues where the last one stopped instead of listing everything again.
* ``410 Gone`` means that position has been compacted away: only a relist helps.
  ``404`` means the resource is not served at all (its CRD is gone, or not
  installed yet): a position from before means nothing then, and once it is
  served again only a relist finds its objects. Every other failure is retried
  from the same position, with backoff, or after the server's ``Retry-After`` if
  it is longer (an overloaded API server sheds load with 429: retrying sooner
  only adds to it).

The Kubernetes client's own ``Watch`` helper is not used: it retries ``410`` by
itself and hides reconnects, which are exactly the events this module must see.

One engine, :class:`Informer`, serves every resource the gateway reads, each
into its own store (:mod:`gateway.sources.kubernetes.sink`); a resource's
informer names its path, and may say what its store makes of a failure
(:mod:`gateway.sources.kubernetes.evictions`).
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, ClassVar, Generic

import aiohttp
import msgspec
from kubernetes.aio.client import ApiClient, Configuration

from gateway.domain.records import GROUP, PLURAL, VERSION
from gateway.sources.kubernetes.backoff import Backoff
from gateway.sources.kubernetes.credentials import client_certificate, present_current_certificate
from gateway.sources.kubernetes.decoding import Event, decode_event, document, hypervisor
from gateway.sources.kubernetes.errors import (
    ApiError,
    Expired,
    NoStreaming,
    NotFound,
    Unauthorized,
    describe,
    raise_status,
    status_of,
)
from gateway.sources.kubernetes.lines import lines
from gateway.sources.kubernetes.pipeline import parsing
from gateway.sources.kubernetes.requests import get, read_json
from gateway.sources.kubernetes.sink import SinkT
from gateway.store.source import SyncStatus
from gateway.store.store import Store

__all__ = ["HypervisorInformer", "Informer", "collection_path"]

log = logging.getLogger(__name__)

#: The annotation on the bookmark that ends a stream's initial events.
INITIAL_EVENTS_END = "k8s.io/initial-events-end"
#: The longest wait a server's Retry-After can impose before the next attempt.
_MAX_RETRY_AFTER = 300.0
#: Seconds of watch events applied in one turn of the event loop, at most but one event.
TURN_SECONDS = 0.002
#: The longest turn a stream that is behind grows to.
_LONGEST_TURN = 0.032
#: Seconds within which an event read after a turn was already there.
_AT_ONCE = 0.0001
#: The events whose object is one of the resource's (the others' are a Status, or a
#: bookmark's resourceVersion).
_OBJECTS = ("ADDED", "MODIFIED", "DELETED")


def collection_path(plural: str) -> str:
    """The path of a cluster-scoped resource of kvm.cloud.sap/v1."""
    return f"/apis/{GROUP}/{VERSION}/{plural}"


class Informer(Generic[SinkT]):
    """Lists and watches one resource (``path``, named ``resource`` in logs and
    errors) into the store :meth:`run` is given.

    Objects are parsed in batches: ``batch_size`` of a stream, ``page_size`` of a
    paginated LIST. A stream's objects wait undecoded and are decoded as they
    are parsed (see gateway.sources.kubernetes.pipeline), so its batch size
    hardly matters (5,000 hosts: 19.6 KiB resident per host in batches of 50,
    19.7 in batches of 250). A LIST page is decoded whole: the records built
    meanwhile pin the memory its objects lay in, so smaller pages leave a
    smaller heap, but pages below 250 are slower (a round trip each).
    ``stream`` turns the streamed initial state off, for servers that accept the
    request and then misbehave. ``watch_timeout`` is
    the range the server-side timeout is drawn from: randomized so replicas do
    not all reconnect at once, and finite so a connection is renewed even when
    nothing seems wrong. ``read_grace`` is added on the client side: the server
    closes first, and a connection that outlives both is dead and gets dropped.
    ``list_timeout`` bounds each LIST page, and the wait for a stream's first event.
    ``credentials`` loads the credentials into ``configuration`` again; it is
    called when the server refuses them, since they may just have expired (a
    new client certificate among them is presented from the next request on).
    ``turn_seconds``: how long watch events are applied before the loop turns (twice
    as long each turn a backlog remains, up to 32 ms), by ``clock``.
    """

    #: The resource as kubectl names it (plural.group), for logs and errors.
    resource: ClassVar[str]
    #: The path of its collection.
    path: ClassVar[str]

    def __init__(
        self,
        configuration: Configuration,
        *,
        page_size: int = 250,
        batch_size: int = 50,
        stream: bool = True,
        watch_timeout: tuple[int, int] = (300, 600),
        read_grace: float = 30.0,
        list_timeout: float = 60.0,
        backoff: Backoff | None = None,
        auth_retry: float = 30.0,
        credentials: Callable[[], Awaitable[None]] | None = None,
        turn_seconds: float = TURN_SECONDS,
        clock: Callable[[], float] = time.perf_counter,
    ) -> None:
        self.status = SyncStatus(source="kubernetes")
        self._configuration = configuration
        self._page_size = page_size
        self._batch_size = batch_size
        self._stream = stream
        self._watch_timeout = watch_timeout
        self._read_grace = read_grace
        self._list_timeout = list_timeout
        self._backoff = backoff or Backoff()
        self._auth_retry = auth_retry
        self._credentials = credentials
        self._turn_seconds = turn_seconds
        self._clock = clock
        #: Whether the credentials were refused again after being loaded anew.
        self._refused_fresh = False
        #: Where the next watch resumes; None means a (re)list is needed.
        self._resource_version: str | None = None
        self._lists = 0
        self._watches = 0

    async def run(self, store: SinkT) -> None:
        presented = client_certificate(self._configuration)
        async with ApiClient(configuration=self._configuration) as client:
            while True:
                try:
                    # A client certificate rotated meanwhile (its file, or by a reload
                    # after a 401) needs a new TLS context before the next request.
                    presented = await present_current_certificate(client, presented)
                    if self._resource_version is None and not self._stream:
                        await self._list(client, store)
                    await self._watch(client, store)
                except NoStreaming as error:
                    log.info("%s: %s; listing in pages instead", self.resource, error)
                    self._stream = False
                except Expired as error:
                    log.info("%s: %s; relisting", self.resource, error)
                    self._resource_version = None
                except Unauthorized as error:
                    await self._unauthorized(store, error)
                except NotFound as error:
                    self._resource_version = None
                    await self._pause(store, error)
                except (ApiError, aiohttp.ClientError, TimeoutError, OSError, ValueError) as error:
                    await self._pause(store, error)
                except Exception as error:  # a bug here must not stop the cache for good
                    log.exception("unexpected error in the %s informer", self.resource)
                    await self._pause(store, error)

    def _failed(self, store: SinkT, error: BaseException) -> None:
        """What ``store`` makes of a failure, before the informer waits to retry.

        Nothing, here: it keeps the last complete view, and ``status.error`` says
        why that may be old.
        """

    async def _unauthorized(self, store: SinkT, error: Unauthorized) -> None:
        """Credentials refused: load them again at once, as they may have expired.

        Only when freshly loaded ones are refused too is it a matter of RBAC or
        a revoked account, which someone has to fix: then each retry waits.
        """
        self.status.error = f"not authorized to list/watch {self.resource}: {error}"
        self.status.synced = False
        self._failed(store, error)
        if self._refused_fresh or self._credentials is None:
            log.error("%s; retrying in %.0fs", self.status.error, self._auth_retry)
            await asyncio.sleep(self._auth_retry)
        else:
            log.warning("%s; loading the credentials again", self.status.error)
        if self._credentials is not None:
            self._refused_fresh = True
            try:
                await self._credentials()
            except Exception as reload_error:  # a plugin that fails, a file gone
                log.error("%s: cannot load the credentials again: %s", self.resource, reload_error)

    async def _pause(self, store: SinkT, error: BaseException) -> None:
        delay = self._backoff.next_delay()
        asked = error.retry_after if isinstance(error, ApiError) else None
        if asked is not None:
            # The server's own estimate beats ours, within reason.
            delay = max(delay, min(asked, _MAX_RETRY_AFTER))
        self.status.error = describe(error)
        self._failed(store, error)
        log.warning("%s: %s; retrying in %.1fs", self.resource, self.status.error, delay)
        await asyncio.sleep(delay)

    # -- LIST ----------------------------------------------------------------------

    async def _list(self, client: ApiClient, store: SinkT) -> None:
        """Load every object page by page, then replace the store in one step.

        The first page is a consistent read (no resourceVersion); the continue
        token pins the remaining pages to the same snapshot, so together they are
        one point in time and the list's resourceVersion is a safe watch start.
        An expired token (410 mid-list) cannot be resumed consistently: start over.
        """
        token: str | None = None
        with parsing(store) as batches:
            while True:
                query = {"limit": str(self._page_size)}
                if token:
                    query["continue"] = token
                response = await get(client, self.path, query, self._list_timeout)
                async with response:
                    body = await read_json(response)
                items = body.get("items") or []
                metadata = body.get("metadata") or {}
                token = metadata.get("continue") or None
                del body
                await batches.add(items)
                del items
                if token is None:
                    break
            prepared = await batches.finish()
            self._synced(store, prepared, str(metadata["resourceVersion"]), batches.count)

    def _synced(self, store: SinkT, prepared: Any, resource_version: str, count: int) -> None:
        """A complete set has arrived: it becomes the store, and the watch resumes after it.

        Called with the collector still paused, so that the store's settle
        (gateway.store.collector) is the one collection to walk the new records before
        freezing them: with the collector back on, the first allocation started
        a full collection of the whole heap first (0.3 s of 0.55 s at 5,000 hosts).
        """
        store.commit(prepared, resource_version)
        store.mark_ready()
        if self._lists:
            self.status.relists += 1
        self._lists += 1
        self._resource_version = resource_version
        self._connected(store)
        self.status.confirm()
        log.info("%s: listed %d objects at %s", self.resource, count, resource_version)

    # -- WATCH ---------------------------------------------------------------------

    async def _watch(self, client: ApiClient, store: SinkT) -> None:
        """Follow changes from the resume position until the server ends the stream.

        Without a resume position, the stream starts with the initial state.
        """
        timeout = random.randint(*self._watch_timeout)
        started, events = time.monotonic(), 0
        query = {
            "watch": "true",
            # Bookmarks carry only a newer resourceVersion. They keep the resume
            # position current while nothing changes, so a reconnect after a quiet
            # hour does not start from a compacted version and force a relist.
            "allowWatchBookmarks": "true",
            "timeoutSeconds": str(timeout),
        }
        initial = self._resource_version is None
        if initial:
            # No resourceVersion with NotOlderThan: the initial state is at least
            # as new as etcd now (a consistent read), served from the watch cache.
            query.update(sendInitialEvents="true", resourceVersionMatch="NotOlderThan")
        else:
            query["resourceVersion"] = str(self._resource_version)
        # The server ends the watch after ``timeout``; the client gives up a little
        # later, so a connection that died silently cannot hang forever.
        response = await get(client, self.path, query, timeout + self._read_grace)
        async with response:
            if initial and response.status in (400, 422):
                # A server without the WatchList feature (or older than 1.27)
                # refuses sendInitialEvents or resourceVersionMatch on a watch.
                status = status_of(await response.read())
                raise NoStreaming(f"HTTP {response.status}: {status.get('message')}")
            if response.status != 200:
                await read_json(response)  # raises the matching error
            self._connected(store)
            if self._watches:
                self.status.watch_restarts += 1
            self._watches += 1
            stream = lines(response.content)
            if initial:
                await self._load_initial(stream, store)
            turn, turn_ends, resumed = self._turn_seconds, 0.0, None
            async for line in stream:
                if resumed is not None:
                    # The next event was there when the loop came back: the stream is
                    # behind, and its turns grow, so a flood is still kept up with.
                    caught_up = self._clock() - resumed > _AT_ONCE
                    turn = self._turn_seconds if caught_up else min(2 * turn, _LONGEST_TURN)
                    turn_ends, resumed = resumed + turn, None
                self._apply(decode_event(line), store)
                events += 1
                # A chunk holds several events, and the reader hands over what it has
                # buffered without waiting: a backlog (a slow turn, a burst of writes)
                # was applied in one turn of the loop, every answer and message held
                # meanwhile (288 ms at 333 changes/s). So the loop turns once a turn
                # is spent: one of ``turn_seconds``, longer while behind.
                if self._clock() >= turn_ends:
                    await asyncio.sleep(0)
                    resumed = self._clock()
        # A stream that ends at once, empty, is a failure in disguise (a proxy
        # closing connections, say); reconnecting immediately would spin.
        if events == 0 and not initial and time.monotonic() - started < 1.0:
            raise ApiError("watch closed immediately without any event")

    async def _load_initial(self, stream: AsyncIterator[bytes], store: SinkT) -> None:
        """Read the initial ADDED events up to the bookmark that ends them; commit them."""
        batch: list[Any] = []
        with parsing(store, self.read) as batches:
            # A server that ignores sendInitialEvents (older than 1.27) sends
            # nothing until something changes; a streaming one starts at once,
            # with the end bookmark if the collection is empty.
            wait: float | None = self._list_timeout
            while True:
                try:
                    line = await asyncio.wait_for(anext(stream), wait)
                except TimeoutError:
                    raise NoStreaming("no initial events from the server") from None
                except StopAsyncIteration:
                    raise ApiError("stream ended before the initial state was complete") from None
                wait = None
                event = decode_event(line)
                kind = event.type
                if kind == "ADDED":
                    batch.append(event.object)
                    if len(batch) >= self._batch_size:
                        await batches.add(batch)
                        batch = []
                elif kind == "BOOKMARK" and _ends_initial_events(obj := document(event.object)):
                    break
                elif kind == "ERROR":
                    raise_status(document(event.object))
                elif kind != "BOOKMARK":
                    log.warning("%s: ignoring %r in the initial state", self.resource, kind)
            await batches.add(batch)
            prepared = await batches.finish()
            self._synced(store, prepared, str(obj["metadata"]["resourceVersion"]), batches.count)

    def _apply(self, event: Event, store: SinkT) -> None:
        kind = event.type
        obj = self.read(event.object) if kind in _OBJECTS else document(event.object)
        if kind == "ERROR":
            # The server reports watch failures in-band, after the 200 headers.
            # Code 410 is the compacted-resourceVersion case; everything else is
            # retried from the same position.
            raise_status(obj)
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
            log.warning("%s: ignoring watch event of type %r", self.resource, kind)
            return
        self.status.events[kind] += 1
        if resource_version:
            self._resource_version = str(resource_version)
        self.status.parse_failures = len(store.rejected)
        self.status.confirm(event=kind != "BOOKMARK")

    def read(self, raw: msgspec.Raw) -> Any:
        """An object of the resource from its JSON, as its store is to parse it: a
        stream's objects (a LIST's pages are decoded whole)."""
        return document(raw)

    def _connected(self, store: SinkT) -> None:
        """The server accepted a request: whatever went wrong before is over."""
        self._refused_fresh = False
        self.status.synced = store.ready
        self.status.error = None
        self.status.parse_failures = len(store.rejected)


class HypervisorInformer(Informer[Store]):
    """The fleet's :class:`~gateway.store.source.Source`: its Hypervisors, from the cluster."""

    resource = f"{PLURAL}.{GROUP}"
    path = collection_path(PLURAL)

    def read(self, raw: msgspec.Raw) -> Any:
        return hypervisor(raw)

    def _failed(self, store: Store, error: BaseException) -> None:
        """No CRD (any more): the cluster serves no Hypervisors, as a watch connected
        while it went would have heard (every object DELETED); and the view is not
        ready, as at a start without the CRD, until it is served and listed again.

        Heard only after a reconnect, the 404 left the deleted fleet served as ready.
        """
        if isinstance(error, NotFound):
            store.clear()
            self.status.synced = False
            self.status.error = f"the cluster does not serve {self.resource} (no Hypervisor CRD)"


def _ends_initial_events(obj: Any) -> bool:
    annotations = (obj.get("metadata") or {}).get("annotations") or {}
    return bool(annotations.get(INITIAL_EVENTS_END) == "true")
