"""Hypervisor and Eviction objects from YAML or JSON files (``--from PATH``), reloaded
on change.

PATH is one file, or a directory whose ``*.yaml``, ``*.yml`` and ``*.json`` files
are read in name order. Directories are not searched recursively and names that
start with a dot are ignored: a ConfigMap mounted as a volume keeps the real files
in hidden ``..data`` directories behind the visible names, and reading both would
load every object twice. Symlinks are followed.

A file holds one object, a multi-document YAML stream, a list of objects, or a
``kind: List`` / ``kind: HypervisorList`` / ``kind: EvictionList`` (what ``kubectl
get hypervisors -o yaml`` prints). Evictions go to the store's evictions, beside
the Hypervisors: files are a complete view, so evictions are available, and none
in the files means none. Objects of other kinds, and objects without a name, are
skipped, logged, and listed in the store's ``rejected`` map. When two objects of
a kind share a name, the one read last (the later file, or later in the file)
wins; the loser is listed as rejected and the winner (a Hypervisor) carries a
warning that names it.

Files are polled (modification time, change time, size, inode): no dependency, and
it also sees a ConfigMap update, which swaps a symlink. A changed file is read once
it has held still for one poll, so that one caught while being written (truncated,
half written) is never taken for its content; the first scan reads at once. Each
change replaces the whole store at once. A file that cannot be read or parsed
(or whose YAML aliases expand beyond reason: see :class:`_Loader`) keeps the
objects it last gave, and ``status.error`` names it until it is fixed;
so does one that looks cut short although it parses: empty after it gave
objects, or a List whose items are not followed by its ``kind`` (kubectl writes
``apiVersion``, ``items``, ``kind``, ``metadata`` in that order, and its Lists do
not say how many items they hold). A file that goes away from a directory takes
its objects with it. If PATH itself goes away, or a file PATH turns into a
directory (Docker mounts an empty one where a bind mount's source is missing),
everything is kept and reported, since a vanished mount is more likely than an
empty fleet.

While it keeps what it last read, the source is still serving a complete view:
``status.synced`` stays true (and /readyz ready), and ``status.error`` says why
the view may be old. Only a file that never read cleanly makes the view incomplete.
"""

from __future__ import annotations

import asyncio
import dataclasses
import errno
import json
import logging
import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import msgspec
import yaml

from gateway.domain.records import GROUP, Hypervisor
from gateway.store.collector import collector_paused
from gateway.store.source import SyncStatus
from gateway.store.store import Store

try:
    from yaml import CSafeLoader as _SafeLoader
except ImportError:  # PyYAML built without libyaml
    from yaml import SafeLoader as _SafeLoader  # type: ignore[assignment]

__all__ = ["FileSource", "FileSourceError", "load_objects"]

log = logging.getLogger(__name__)

SUFFIXES = (".yaml", ".yml", ".json")


class FileSourceError(Exception):
    """PATH cannot be a source at all; raised by :meth:`FileSource.check` before serving."""


#: Values an aliased YAML file may hold, its aliases expanded: at least this many...
MIN_EXPANDED = 1_000_000
#: ... or this many per byte of the file (a value takes two bytes at the least).
EXPANDED_PER_BYTE = 16


class _Loader(_SafeLoader):
    """Safe YAML as Kubernetes reads it: timestamps stay strings, not datetimes.

    An alias is the object its anchor made, shared: a few hundred bytes of aliases
    of aliases hold 10^12 values once walked as a tree, which every reader of an
    object does (its fingerprint's JSON, the parser). A file that uses aliases
    (kubectl never writes one) is walked once, bounded, before it is taken.
    """

    aliased = False

    def construct_object(self, node: yaml.Node, deep: bool = False) -> Any:
        if node in self.constructed_objects:  # made before: an alias of its anchor
            self.aliased = True
        return super().construct_object(node, deep)


_Loader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in _SafeLoader.yaml_implicit_resolvers.items()
}


#: (mtime, ctime, size, inode): ctime catches a chmod that makes a file readable again.
_Stamp = tuple[int, int, int, int]


@dataclasses.dataclass(frozen=True, slots=True)
class _File:
    """What one file last gave: its good objects, what it skipped, and its current error."""

    stamp: _Stamp
    objects: tuple[tuple[str, dict[str, Any]], ...]
    skipped: dict[str, str]
    error: str | None = None
    #: False until the file was read cleanly once: its objects are then missing.
    complete: bool = True


def load_objects(path: Path) -> tuple[list[tuple[str, dict[str, Any]]], dict[str, str]]:
    """Read one file: its Hypervisor and Eviction objects (with where each was) and the
    skipped ones.

    Raises ``OSError``, ``ValueError`` (bad JSON or encoding) or ``yaml.YAMLError``
    when the file as a whole cannot be read (``RecursionError`` when nested too deeply).
    """
    data = path.read_bytes()
    with collector_paused():
        documents = [json.loads(data)] if path.suffix.lower() == ".json" else _yaml_documents(data)
    objects: list[tuple[str, dict[str, Any]]] = []
    skipped: dict[str, str] = {}
    for position, obj in enumerate(_items(documents)):
        where = f"{path}[{position}]"
        reason = _unusable(obj)
        if reason is None:
            objects.append((where, obj))
        else:
            skipped[where] = reason
            log.warning("%s: %s", where, reason)
    return objects, skipped


def _yaml_documents(data: bytes) -> list[Any]:
    loader = _Loader(data)
    try:
        documents = []
        while loader.check_data():  # type: ignore[no-untyped-call]  # yaml.load_all's loop
            documents.append(loader.get_data())
    finally:
        loader.dispose()
    if loader.aliased:
        _within(documents, max(MIN_EXPANDED, EXPANDED_PER_BYTE * len(data)))
    return documents


def _within(documents: list[Any], limit: int) -> None:
    """Raise ValueError when ``documents``, each alias expanded, hold more than ``limit``
    values (a self-referencing alias holds infinitely many)."""
    count = 0
    waiting: list[Any] = [documents]
    while waiting:
        container = waiting.pop()
        values = container.values() if isinstance(container, dict) else container
        count += len(values)
        if count > limit:
            raise ValueError(f"its aliases expand to more than {limit:,} values; refused")
        waiting.extend(v for v in values if isinstance(v, dict | list))


def _items(documents: Iterable[Any]) -> Iterator[Any]:
    """The objects of each document: lists and ``kind: *List`` are unwrapped once."""
    for document in documents:
        if document is None:  # an empty document, e.g. after a trailing "---"
            continue
        if isinstance(document, list):
            yield from document
        elif isinstance(document, dict) and "kind" not in document and "items" in document:
            raise ValueError("a List without the kind that follows its items: cut short")
        elif (
            isinstance(document, dict)
            and str(document.get("kind", "")).endswith("List")
            and isinstance(document.get("items"), list)
        ):
            if document["kind"] in _TYPED_LISTS:
                # A typed list's items may leave out the kind they all share.
                for item in document["items"]:
                    if isinstance(item, dict) and "kind" not in item:
                        item["kind"] = _TYPED_LISTS[document["kind"]]
                        item.setdefault("apiVersion", document.get("apiVersion"))
            yield from document["items"]
        else:
            yield document


#: The kinds the store takes, by the kind of their typed lists.
_TYPED_LISTS = {"HypervisorList": "Hypervisor", "EvictionList": "Eviction"}


def _unusable(obj: Any) -> str | None:
    """Why ``obj`` is not a Hypervisor or Eviction object the store can take, or None."""
    if not isinstance(obj, dict):
        return f"expected an object, got {type(obj).__name__}; skipped"
    if obj.get("kind") not in _TYPED_LISTS.values():
        return f"kind {obj.get('kind')!r} is not Hypervisor or Eviction; skipped"
    api_version = obj.get("apiVersion")
    if api_version is not None and not str(api_version).startswith(f"{GROUP}/"):
        return f"apiVersion {api_version!r} is not in group {GROUP}; skipped"
    meta = obj.get("metadata")
    name = meta.get("name") if isinstance(meta, dict) else None
    if not isinstance(name, str) or not name:
        return "metadata.name is missing; skipped"
    return None


class FileSource:
    """Serves the Hypervisor and Eviction objects found at ``path``, polling it for changes."""

    def __init__(self, path: str | os.PathLike[str], poll_interval: float = 1.0) -> None:
        self.path = Path(path)
        self.poll_interval = poll_interval
        self.status = SyncStatus(source=f"files:{self.path}")
        self._files: dict[Path, _File] = {}
        self._path_error: str | None = None
        #: Stamps of changed files seen once, to be read if the next poll sees them again.
        self._changing: dict[Path, _Stamp] = {}
        self._scanned = False
        #: Whether PATH was ever listed: until then, nothing it holds is served.
        self._listed = False
        #: Whether PATH was a file: a directory there is then a mount gone wrong.
        self._was_file = False

    def check(self) -> None:
        """Fail fast, before serving, when PATH is missing or cannot be read."""
        try:
            self._listing()
        except OSError as error:
            raise FileSourceError(f"--from {self.path}: {_reason(error)}") from error
        if not os.access(self.path, os.R_OK):
            raise FileSourceError(f"--from {self.path}: permission denied")

    async def run(self, store: Store) -> None:
        first = True
        while True:
            changed = await asyncio.to_thread(self.scan)
            if changed or first:
                self._publish(store)
            if first:
                store.mark_ready()
                first = False
            if self.status.error is None:
                self.status.confirm(event=changed)
            await asyncio.sleep(self.poll_interval)

    def scan(self) -> bool:
        """Re-read the files that changed; whether anything (objects or errors) changed."""
        try:
            paths = self._listing()
        except OSError as error:
            message = f"{self.path}: {_reason(error)}; keeping the last objects read"
            changed, self._path_error = message != self._path_error, message
            if changed:
                log.error("%s", message)
            return changed
        changed = self._path_error is not None
        self._path_error = None
        self._listed = True
        for gone in self._files.keys() - set(paths):
            log.info("%s: removed; its objects are gone", gone)
            del self._files[gone]
            changed = True
        for gone in self._changing.keys() - set(paths):
            del self._changing[gone]
        for path in paths:
            changed |= self._refresh(path)
        self._scanned = True
        return changed

    def _listing(self) -> list[Path]:
        """The files to read, in order; raises ``OSError`` when PATH is unusable."""
        if not self.path.is_dir():
            os.stat(self.path)  # the error for a missing path, a broken symlink, ...
            if not self.path.is_file():
                raise OSError(errno.EINVAL, "not a regular file or a directory")
            self._was_file = True
            return [self.path]
        if self._was_file:
            raise OSError(errno.EISDIR, "A directory where the file was (a missing bind mount?)")
        return sorted(
            entry
            for entry in (self.path / name for name in os.listdir(self.path))
            if not entry.name.startswith(".")
            and entry.suffix.lower() in SUFFIXES
            and entry.is_file()
        )

    def _refresh(self, path: Path) -> bool:
        """Re-read ``path`` if its stamp changed; whether it did."""
        previous = self._files.get(path)
        try:
            info = os.stat(path)
        except OSError as error:
            stamp: _Stamp = (0, 0, 0, 0)
            failure: Exception = error
        else:
            stamp = (info.st_mtime_ns, info.st_ctime_ns, info.st_size, info.st_ino)
            if previous is not None and previous.stamp == stamp:
                return False
            if self._scanned and self._changing.get(path) != stamp:
                self._changing[path] = stamp  # perhaps mid-write: read it if it holds still
                return False
            self._changing.pop(path, None)
            try:
                objects, skipped = load_objects(path)
                if not (objects or skipped) and previous is not None and previous.objects:
                    raise ValueError("empty: cut short, or still being written")
            except Exception as error:  # any bad content (even nesting too deep) is data
                failure = error
            else:
                self._files[path] = _File(stamp, tuple(objects), skipped)
                log.info("%s: %d objects", path, len(objects))
                return True
        message = f"{path}: {_reason(failure)}"
        if previous is not None and previous.error == message and previous.stamp == stamp:
            return False
        log.error("%s; keeping the objects it last gave", message)
        kept = previous or _File(stamp, (), {}, complete=False)
        self._files[path] = dataclasses.replace(kept, stamp=stamp, error=message)
        return True

    def _publish(self, store: Store) -> None:
        """Replace the store with every file's objects; the later of two namesakes wins."""
        rejected: dict[str, str] = {}
        for path in sorted(self._files):
            rejected.update(self._files[path].skipped)
        chosen, doubles = self._chosen("Hypervisor", rejected)
        prepared = store.prepare((obj for _, obj in chosen.values()), versioned=False)
        _warn_doubles(prepared.hypervisors, doubles, chosen)
        store.commit(prepared)
        evictions, _ = self._chosen("Eviction", rejected)
        store.evictions.replace(obj for _, obj in evictions.values())
        store.rejected.update(rejected)
        errors = [f.error for f in self._files.values() if f.error]
        if self._path_error:
            errors.insert(0, self._path_error)
        self.status.error = "; ".join(errors) or None
        self.status.synced = self._listed and all(f.complete for f in self._files.values())
        self.status.parse_failures = len(store.rejected)

    def _chosen(
        self, kind: str, rejected: dict[str, str]
    ) -> tuple[dict[str, tuple[str, dict[str, Any]]], dict[str, list[str]]]:
        """The objects of ``kind`` by name, each with where it was (the last one read
        wins), and where each winner's namesakes were (entered in ``rejected``)."""
        chosen: dict[str, tuple[str, dict[str, Any]]] = {}
        doubles: dict[str, list[str]] = {}
        for path in sorted(self._files):
            for where, obj in self._files[path].objects:
                if obj["kind"] != kind:
                    continue
                name = obj["metadata"]["name"]
                if name in chosen:
                    earlier = chosen[name][0]
                    log.warning(
                        "%s %s is in %s and %s; using %s", kind, name, earlier, where, where
                    )
                    rejected[earlier] = f"{kind} {name} is defined again in {where}, which wins"
                    doubles.setdefault(name, []).append(earlier)
                chosen[name] = (where, obj)
        return chosen, doubles


_DOUBLE = "metadata.name: also defined in "


def _warn_doubles(
    hypervisors: dict[str, Hypervisor],
    doubles: dict[str, list[str]],
    chosen: dict[str, tuple[str, dict[str, Any]]],
) -> None:
    """Give each winner of a shared name a warning naming the losers, and only those.

    A record whose object did not change is the one the store already holds, so
    a warning from an earlier publish is taken off before the current one is added.
    """
    for name, hypervisor in hypervisors.items():
        kept = tuple(w for w in hypervisor.warnings if not w.startswith(_DOUBLE))
        added = tuple(
            f"{_DOUBLE}{earlier}, which {chosen[name][0]} overrides"
            for earlier in doubles.get(name, ())
        )
        if kept + added != hypervisor.warnings:
            hypervisors[name] = msgspec.structs.replace(hypervisor, warnings=kept + added)


def _reason(error: Exception) -> str:
    """A one-line cause: the OS's words, or the parser's first line and position."""
    if isinstance(error, RecursionError):
        return "nested too deeply"
    if isinstance(error, OSError) and error.strerror:
        return error.strerror[0].lower() + error.strerror[1:]
    if isinstance(error, yaml.MarkedYAMLError) and error.problem_mark is not None:
        mark = error.problem_mark
        return f"invalid YAML at line {mark.line + 1}, column {mark.column + 1}: {error.problem}"
    if isinstance(error, json.JSONDecodeError):
        return f"invalid JSON at line {error.lineno}, column {error.colno}: {error.msg}"
    return str(error).splitlines()[0] if str(error) else type(error).__name__
