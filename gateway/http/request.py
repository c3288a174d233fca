"""Reading a GraphQL-over-HTTP request: media types, body and parameters.

Everything here happens before GraphQL is involved, and each refusal is one of
two kinds: an :class:`HttpError` (wrong method, media type, size or speed), or a
:class:`RequestError` (parameters that do not make a GraphQL request), whose
status depends on the media type the client accepts.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import itertools
import json
import re
import sys
from collections.abc import Iterator, Mapping
from typing import Any

from graphql import GraphQLError
from starlette.datastructures import QueryParams
from starlette.requests import Request

from gateway.api.codes import Code, for_status
from gateway.api.limits import Limits

__all__ = [
    "ALLOW",
    "GRAPHQL_RESPONSE",
    "JSON",
    "HttpError",
    "Params",
    "RequestError",
    "TooDeep",
    "loads",
    "negotiate",
    "params_of",
    "persisted_hash",
    "read_payload",
    "wants_graphiql",
    "weighted",
]

GRAPHQL_RESPONSE = "application/graphql-response+json"
JSON = "application/json"
#: The methods /graphql answers (OPTIONS with this list), for every ``Allow`` header.
ALLOW = "GET, POST, OPTIONS"


class HttpError(Exception):
    """A request refused before GraphQL is involved (method, media type, size)."""

    def __init__(
        self,
        status: int,
        message: str,
        headers: Mapping[str, str] | None = None,
        code: str | None = None,
    ):
        super().__init__(message)
        self.status = status
        self.headers = dict(headers or {})
        self.code: str = code or for_status(status).value


class RequestError(Exception):
    """A GraphQL request error: the operation was never executed, so no ``data``.

    ``status`` overrides the spec's media-type-dependent status: a request over a
    limit of what running it costs (cost, time, response size), or parameters that
    do not make a GraphQL request at all (a body that is not JSON, a ``query`` that
    is not a string), are refused with a 4xx whichever media type the client
    accepts. A well-formed request whose document fails to parse or validate (the
    limits on its shape included) or whose variables do not coerce keeps the 200
    that ``application/json`` promises.
    """

    def __init__(self, errors: list[GraphQLError], status: int | None = None):
        super().__init__(errors[0].message)
        self.errors = errors
        self.status = status


@dataclasses.dataclass(frozen=True, slots=True)
class Params:
    #: Empty when the request named its document by ``persisted`` alone.
    query: str
    operation_name: str | None
    variables: dict[str, Any] | None
    #: The SHA-256 of the document, from ``extensions.persistedQuery`` (gateway.http.persisted).
    persisted: str | None = None


async def read_payload(request: Request, limits: Limits) -> bytes:
    """What carries the GraphQL parameters: the query string (GET) or the JSON body (POST).

    Everything a request's parameters depend on is its method and this payload, so
    the two identify a request for :func:`params_of` and whatever follows from it.
    """
    if request.method == "GET":
        return bytes(request.scope["query_string"])
    if request.method != "POST":
        raise HttpError(405, f"{request.method} is not allowed", {"allow": ALLOW})
    _check_content_type(request.headers.get("content-type"))
    body = await _read_body(request, limits.max_body_bytes, limits.max_body_seconds)
    if not body:
        raise HttpError(400, "a POST request needs a JSON body")
    return body


class TooDeep(ValueError):
    """JSON nested deeper than the limit, found before it is decoded."""


_SHA256 = re.compile(r"[0-9a-f]{64}")
_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"', re.DOTALL)
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")
_STEP = [1 if b in b"[{" else -1 for b in range(256)]


def loads(data: str | bytes, max_depth: int) -> Any:
    """JSON (UTF-8, nothing ``json.loads`` takes beyond the standard), refusing
    (:class:`TooDeep`) nesting deeper than ``max_depth``.

    The decoder recurses once per level, and a few thousand levels (a few KB)
    exhaust the stack. So the nesting is measured first, at C speed: strings are
    removed, then everything but brackets, and the running sum of +1 per opening
    and -1 per closing bracket is the depth. A document with fewer brackets than
    the limit cannot be too deep and skips all that.
    """
    raw = data.encode() if isinstance(data, str) else data
    if raw.count(b"[") + raw.count(b"{") > max_depth:
        brackets = _STRING.sub(b"", raw).translate(None, _NOT_BRACKETS)
        if max(itertools.accumulate(map(_STEP.__getitem__, brackets)), default=0) > max_depth:
            raise TooDeep(f"JSON nested deeper than {max_depth} levels")
    # Only JSON: UTF-8 (json.loads would take UTF-16 and UTF-32 bytes too), and
    # neither NaN and Infinity nor an integer too long for Python to read.
    return json.loads(raw.decode(), parse_constant=_not_json, parse_int=_integer)


#: Digits of the longest integer read: Python's own limit for reading one (4,300),
#: which it reports in words about its settings.
_LONGEST_INTEGER = sys.get_int_max_str_digits()


def _not_json(constant: str) -> Any:
    raise ValueError(f"{constant} is not JSON")


def _integer(text: str) -> int:
    if len(text.lstrip("-")) > _LONGEST_INTEGER:
        raise ValueError(f"an integer of more than {_LONGEST_INTEGER} digits")
    return int(text)


def params_of(method: str, payload: bytes, max_json_depth: int = 64) -> Params:
    """The GraphQL parameters in a payload read by :func:`read_payload`."""
    if method == "GET":
        return _params_from_query(QueryParams(payload), max_json_depth)
    try:
        parsed = loads(payload, max_json_depth)
    except TooDeep as error:
        raise _malformed([f"body refused: {error}"]) from error
    except (ValueError, UnicodeDecodeError) as error:
        raise _malformed([f"body is not valid JSON: {error}"]) from error
    if not isinstance(parsed, dict):
        raise _malformed(["body must be a JSON object (batching is not supported)"])
    return _params_from(parsed)


def weighted(header: str) -> Iterator[tuple[str, float]]:
    """The values of an Accept-style header (Accept, Accept-Encoding), lower case, with
    their quality: ``q`` of 1 unless given, 0 when unreadable (RFC 9110, 12.4.2)."""
    for part in header.split(","):
        value, *options = (p.strip() for p in part.split(";"))
        q = 1.0
        for option in options:
            key, _, given = option.partition("=")
            if key.strip() == "q":
                try:
                    q = float(given)
                except ValueError:
                    q = 0.0
        yield value.lower(), q


@functools.lru_cache(maxsize=64)
def negotiate(accept: str | None) -> str:
    """Pick the response media type from the Accept header (spec, section 'Accept').

    Remembered for the last few headers: clients send the same one with every request.
    """
    if not accept:
        return JSON
    quality: dict[str, float] = {}
    for media, q in weighted(accept):
        if media == GRAPHQL_RESPONSE:
            quality[GRAPHQL_RESPONSE] = max(q, quality.get(GRAPHQL_RESPONSE, 0.0))
        elif media in (JSON, "application/*", "*/*"):
            quality[JSON] = max(q, quality.get(JSON, 0.0))
    acceptable = {m: q for m, q in quality.items() if q > 0}
    if not acceptable:
        raise HttpError(
            406, f"cannot answer with any of: {accept}; accept {GRAPHQL_RESPONSE} or {JSON}"
        )
    return max(acceptable, key=lambda m: (acceptable[m], m == GRAPHQL_RESPONSE))


def wants_graphiql(request: Request) -> bool:
    return (
        request.method == "GET"
        and "query" not in request.query_params
        and "text/html" in request.headers.get("accept", "")
    )


@functools.lru_cache(maxsize=64)
def _check_content_type(content_type: str | None) -> None:
    """Refuses anything but JSON in UTF-8; what passed is remembered, as for Accept."""
    if not content_type:
        raise HttpError(415, f"Content-Type is required; send {JSON}")
    media, *options = (p.strip().lower() for p in content_type.split(";"))
    if media != JSON:
        raise HttpError(415, f"unsupported Content-Type {media!r}; send {JSON}")
    for option in options:
        key, _, value = option.partition("=")
        if key.strip() == "charset" and value.strip().strip('"') not in ("utf-8", "utf8"):
            raise HttpError(415, f"unsupported charset {value!r}; send utf-8")


async def _read_body(request: Request, limit: int, seconds: float) -> bytes:
    """The body, refused early when too large (413) or sent too slowly (408)."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise HttpError(413, f"body larger than {limit} bytes")
    chunks, size = [], 0
    loop = asyncio.get_running_loop()
    try:
        async with asyncio.timeout(None) as deadline:
            # The body nearly always came with the headers, and the read does not wait.
            # Then no timer is needed (one costs 3-6 us under uvloop, a tenth of a cached
            # answer): it is armed by a callback, which runs only if the read waits.
            arming = loop.call_soon(deadline.reschedule, loop.time() + seconds)
            try:
                async for chunk in request.stream():
                    size += len(chunk)
                    if size > limit:
                        raise HttpError(413, f"body larger than {limit} bytes")
                    chunks.append(chunk)
            finally:
                arming.cancel()
    except TimeoutError:
        raise HttpError(408, f"body not received within {seconds:g} s") from None
    return b"".join(chunks)


def _params_from_query(query: Mapping[str, str], max_json_depth: int) -> Params:
    raw: dict[str, Any] = {k: query[k] for k in ("query", "operationName") if k in query}
    for key in ("variables", "extensions"):
        if key in query:
            try:
                raw[key] = loads(query[key], max_json_depth)
            except TooDeep as error:
                raise _malformed([f"{key} refused: {error}"]) from error
            except ValueError as error:
                raise _malformed([f"{key} is not valid JSON"]) from error
    return _params_from(raw)


def _params_from(raw: Mapping[str, Any]) -> Params:
    query, name = raw.get("query"), raw.get("operationName")
    variables, extensions = raw.get("variables"), raw.get("extensions")
    problems = []
    persisted = persisted_hash(extensions) if isinstance(extensions, dict) else None
    if query is None and persisted is not None:
        query = ""  # the document is the persisted one's
    if not isinstance(query, str):
        problems.append("query must be a string" if "query" in raw else "query is required")
    if name is not None and not isinstance(name, str):
        problems.append("operationName must be a string")
    if variables is not None and not isinstance(variables, dict):
        problems.append("variables must be an object")
    if extensions is not None and not isinstance(extensions, dict):
        problems.append("extensions must be an object")
    if problems:
        raise _malformed(problems)
    return Params(query, name, variables, persisted)  # type: ignore[arg-type]


def persisted_hash(extensions: Mapping[str, Any] | None) -> str | None:
    """The SHA-256 an ``extensions.persistedQuery`` names; None without one.

    Raises :class:`RequestError` (400) for one that is not version 1 with a hex hash.
    """
    found = (extensions or {}).get("persistedQuery")
    if found is None:
        return None
    version = found.get("version") if isinstance(found, dict) else None
    if type(version) is not int or version != 1:  # not true, nor 1.0: JSON's 1
        raise _coded(
            Code.PERSISTED_QUERY_VERSION_NOT_SUPPORTED.value, "expected persistedQuery version 1"
        )
    hash_ = found.get("sha256Hash")
    if not isinstance(hash_, str) or not _SHA256.fullmatch(hash_):
        raise _coded("BAD_REQUEST", "persistedQuery.sha256Hash must be 64 lowercase hex digits")
    return hash_


def _coded(code: str, message: str) -> RequestError:
    return RequestError([GraphQLError(message, extensions={"code": code})], status=400)


def _malformed(problems: list[str]) -> RequestError:
    """Parameters that are not a GraphQL request: 400 under either media type."""
    code = {"code": Code.BAD_REQUEST.value}
    return RequestError([GraphQLError(p, extensions=code) for p in problems], status=400)
