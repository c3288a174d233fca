"""HTTP caching of GET answers: ETag, 304 while it holds, headers that keep users apart."""

from __future__ import annotations

import copy

import httpx
import pytest

from gateway.http.auth import Decision, Verdict
from gateway.http.cache import BoundedMemoryCache, ResponseCache
from gateway.http.conditional import etag, matches, tag_of
from gateway.sources.demo.source import generate
from tests import fleet
from tests.support import serve

NAMES = "{ hypervisors { nodes { name } } }"


async def get(client: httpx.AsyncClient, **headers: str) -> httpx.Response:
    return await client.get("/graphql", params={"query": NAMES}, headers=headers)


@pytest.mark.parametrize("cached", [False, True])
async def test_a_get_is_revalidated_with_its_etag_until_the_answer_changes(cached: bool) -> None:
    cache = ResponseCache(BoundedMemoryCache()) if cached else None
    async with serve(fleet.objects(), cache=cache) as (client, store):
        first = await get(client)
        tag = first.headers["etag"]
        assert first.headers["cache-control"] == "no-cache"
        assert set(first.headers["vary"].split(", ")) >= {"Accept", "Accept-Encoding"}
        again = await get(client, **{"if-none-match": tag})
        assert (again.status_code, again.content) == (304, b"")
        assert again.headers["etag"] == tag and "content-type" not in again.headers
        assert (await get(client, **{"if-none-match": '"other"'})).status_code == 200
        renamed = copy.deepcopy(fleet.objects())
        renamed[0]["metadata"]["name"] = "node-renamed"
        store.replace(renamed)
        changed = await get(client, **{"if-none-match": tag})
        assert changed.status_code == 200 and changed.headers["etag"] != tag
        assert "node-renamed" in changed.text


async def test_one_etag_per_encoding_and_either_revalidates() -> None:
    async with serve(generate(100)) as (client, _):
        plain = await get(client, **{"accept-encoding": "identity"})
        zipped = await get(client, **{"accept-encoding": "gzip"})
        assert zipped.headers["content-encoding"] == "gzip"
        assert zipped.headers["etag"] != plain.headers["etag"]
        revalidated = await get(
            client, **{"accept-encoding": "gzip", "if-none-match": plain.headers["etag"]}
        )
        assert revalidated.status_code == 304
        assert revalidated.headers["etag"] == zipped.headers["etag"]


async def test_post_answers_are_not_stored_and_not_revalidated() -> None:
    async with serve(fleet.objects()) as (client, _):
        first = await client.post("/graphql", json={"query": NAMES})
        assert first.headers["cache-control"] == "no-store"
        assert "etag" not in first.headers
        tag = (await get(client)).headers["etag"]
        again = await client.post("/graphql", json={"query": NAMES}, headers={"if-none-match": tag})
        assert again.status_code == 200 and again.content == first.content


class Reader:
    async def check(self, token: str | None) -> Verdict:
        if token == "reader":
            return Verdict(Decision.ALLOWED, "reader", "allowed")
        return Verdict(Decision.INVALID, None, "token not accepted")


async def test_with_authentication_answers_are_private_and_vary_by_authorization() -> None:
    async with serve(fleet.objects(), authorizer=Reader()) as (client, _):
        answer = await get(client, authorization="Bearer reader")
        assert answer.status_code == 200
        assert answer.headers["cache-control"] == "private, no-cache"
        assert "Authorization" in answer.headers["vary"]
        refused = await get(client, **{"if-none-match": answer.headers["etag"]})
        assert refused.status_code == 401  # no 304 for whoever holds a tag


def test_the_tag_is_what_the_answer_says_and_if_none_match_is_read_as_rfc_9110_says() -> None:
    tag = tag_of(b'{"data":{}}')
    assert tag != tag_of(b'{"data":null}') and len(tag) == 32
    assert matches(etag(tag, None), tag) and matches(etag(tag, "gzip"), tag)
    assert matches(f'"x", W/{etag(tag, "zstd")}', tag)
    assert matches("*", tag)
    assert not matches(None, tag) and not matches('"x"', tag)


async def test_a_dashboard_on_another_origin_may_revalidate() -> None:
    origin = "https://dash.example"
    async with serve(fleet.objects(), cors_origins=[origin]) as (client, _):
        preflight = await client.options(
            "/graphql",
            headers={
                "origin": origin,
                "access-control-request-method": "GET",
                "access-control-request-headers": "if-none-match",
            },
        )
        answer = await get(client, origin=origin)
    assert preflight.status_code == 200
    assert "if-none-match" in preflight.headers["access-control-allow-headers"].lower()
    assert answer.headers["access-control-expose-headers"].lower() == "etag"
