"""JSON from the API server, decoded in C.

A start decodes the whole fleet, event by event: with the standard library's
``json`` that was 0.15 ms of the ~1 ms each host cost (1,000 hosts, 14 KiB of
JSON each), with msgspec's decoder 0.10 ms. It is as exact as ``json``: an
integer of any size stays an integer (orjson, as fast, makes a float of one
beyond 64 bits). A watch event is read in two steps: its envelope as it
arrives, its object (checked as JSON, but still a slice of the line) where it
is parsed, so that a batch waiting for the parser is no larger than its JSON.

A Hypervisor is decoded as it is parsed (:func:`hypervisor`): the places of the
parts the parser reads as wholes (gateway.domain.parse.PARTS), its bookings and
instances (two thirds of a 40-booking host's JSON) among them, stay JSON, which
the parser decodes only where they are not spelled as in the version before, and
``metadata.managedFields``, which the parser never reads, is skipped. A status
patch (most of a region's changes) then decodes the few values it wrote.
"""

from __future__ import annotations

from typing import Any

import msgspec
from msgspec import UNSET, Raw, UnsetType

from gateway.domain.parse import PARTS

__all__ = ["Event", "MalformedJSON", "decode", "decode_event", "document", "hypervisor"]


class Event(msgspec.Struct):
    """A watch event whose object is still JSON: decoded where it is parsed."""

    type: Any = None
    object: msgspec.Raw = msgspec.Raw(b"null")


_DECODER: msgspec.json.Decoder[Any] = msgspec.json.Decoder()
_EVENTS = msgspec.json.Decoder(Event)


class MalformedJSON(ValueError):
    """A body or watch line that is not JSON: a cut stream, a proxy's error page."""


def decode(document: bytes | msgspec.Raw) -> Any:
    """One JSON document as dicts, lists, strings and numbers."""
    try:
        return _DECODER.decode(document)
    except msgspec.DecodeError as error:
        raise MalformedJSON(f"not JSON ({error})") from None


def decode_event(line: bytes) -> Event:
    """A watch event, its object checked as JSON but not decoded."""
    try:
        return _EVENTS.decode(line)
    except msgspec.DecodeError as error:
        raise MalformedJSON(f"not a watch event ({error})") from None


def document(raw: msgspec.Raw) -> Any:
    """An event's object, decoded; an absent or null one is empty, as it is to the informer."""
    return decode(raw) or {}


#: What the parser reads of each section of a Hypervisor besides the places of its
#: parts (gateway.domain.parse.PARTS): values, decoded as they are.
_VALUES = {
    "metadata": (
        "name",
        "uid",
        "resourceVersion",
        "generation",
        "creationTimestamp",
        "annotations",
    ),
    "spec": (
        "maintenance",
        "maintenanceReason",
        "lifecycleEnabled",
        "highAvailability",
        "allowedProjects",
        "version",
        "skipTests",
    ),
    "status": (
        "numInstances",
        "hypervisorId",
        "serviceId",
        "internalIp",
        "hypervisorVersion",
        "libVirtVersion",
        "evicted",
        "specHash",
    ),
}


def _section(section: str) -> Any:
    """A section's fields: the places of the parser's parts left JSON, its values decoded."""
    places = [key for part in PARTS.places for within, key in part if within == section]
    fields: list[tuple[str, Any, Any]] = [(key, Raw | UnsetType, UNSET) for key in places]
    fields += [(key, Any, UNSET) for key in _VALUES[section]]
    return msgspec.defstruct(f"_{section.title()}", fields)


_Hypervisor = msgspec.defstruct(
    "_Hypervisor",
    [
        ("apiVersion", Any, UNSET),
        ("kind", Any, UNSET),
        *((section, _section(section) | UnsetType, UNSET) for section in _VALUES),
    ],
)
_HYPERVISORS = msgspec.json.Decoder(_Hypervisor)


def hypervisor(raw: Raw) -> Any:
    """A Hypervisor object's JSON as gateway.domain.parse reads it: what it reads, as
    :func:`document` decodes it, but the parts it reads as wholes left as JSON (a
    :class:`msgspec.Raw`). An object whose parts are not what the CRD makes
    them (a ``spec`` that is no object, say) is decoded whole, for the parser to warn
    about: those are rare, and JSON all the same.
    """
    try:
        decoded = _HYPERVISORS.decode(raw)
    except msgspec.ValidationError:
        return document(raw)
    except msgspec.DecodeError as error:
        raise MalformedJSON(f"not JSON ({error})") from None
    # As mappings, the fields it did not have left out, the parts' JSON kept as it is.
    return msgspec.to_builtins(decoded, builtin_types=(Raw,))
