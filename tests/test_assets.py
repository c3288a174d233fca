"""The dashboard and GraphiQL pages through the real ASGI app: served, complete, local only."""

from __future__ import annotations

import base64
import glob
import gzip
import hashlib
import re
import tomllib
from collections.abc import AsyncIterator
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import urljoin, urlsplit

import httpx
import pytest

from gateway.http.assets import STATIC
from tests import fleet
from tests.support import serve

ROOT = Path(__file__).resolve().parents[1]
VENDOR = STATIC / "vendor"
# Python's own table says application/javascript before 3.12; browsers take both.
JAVASCRIPT = {"text/javascript", "application/javascript"}
MEDIA_TYPES = {".js": JAVASCRIPT, ".css": {"text/css"}, ".html": {"text/html"}}
BROWSER = {"accept": "text/html,application/xhtml+xml,*/*;q=0.8"}


@pytest.fixture
async def client() -> AsyncIterator[httpx.AsyncClient]:
    async with serve(fleet.objects()) as (client, _):
        yield client


class _References(HTMLParser):
    """The src/href of every element, with its integrity attribute if any."""

    def __init__(self) -> None:
        super().__init__()
        self.found: list[tuple[str, str | None]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        for name in ("src", "href"):
            if values.get(name):
                self.found.append((values[name] or "", values.get("integrity")))


def references(html: str) -> list[tuple[str, str | None]]:
    parser = _References()
    parser.feed(html)
    return parser.found


def media_type(response: httpx.Response) -> str:
    return response.headers["content-type"].split(";")[0].strip()


async def graphiql_page(client: httpx.AsyncClient) -> httpx.Response:
    response = await client.get("/graphql", headers={"accept": "text/html"})
    assert response.status_code == 200
    assert media_type(response) == "text/html"
    return response


async def test_root_serves_the_dashboard(client: httpx.AsyncClient) -> None:
    response = await client.get("/")
    assert response.status_code == 200
    assert media_type(response) == "text/html"
    assert response.headers["cache-control"] == "no-cache"
    assert '<script type="module" src="static/dashboard.js">' in response.text
    for element in ('id="zones"', 'id="hypervisors"', 'id="consumer-form"', 'id="connection"'):
        assert element in response.text


@pytest.mark.parametrize("page", ["/", "/graphql"])
async def test_every_reference_is_local_and_served(client: httpx.AsyncClient, page: str) -> None:
    html = (await client.get(page, headers={"accept": "text/html"})).text
    found = [url for url, _ in references(html) if not url.startswith("data:")]
    assert found, "the page loads nothing"
    for url in found:
        assert not urlsplit(url).scheme and not url.startswith("//"), url
        # As a browser asks: a link to /graphql is a navigation, answered with GraphiQL.
        response = await client.get(urljoin(f"http://gateway{page}", url), headers=BROWSER)
        assert response.status_code == 200, url
        if Path(url).suffix in MEDIA_TYPES:
            assert media_type(response) in MEDIA_TYPES[Path(url).suffix], url


async def test_graphiql_names_no_other_host(client: httpx.AsyncClient) -> None:
    html = (await graphiql_page(client)).text
    assert not re.search(r"https?://|//[a-z]", html, re.IGNORECASE)
    assert "static/vendor/graphiql-3.8.3/graphiql.min.js" in html


async def test_graphiql_integrity_attributes_match_the_files(client: httpx.AsyncClient) -> None:
    """The browser refuses a vendored file whose hash differs: keep both in step."""
    checked = 0
    for url, integrity in references((await graphiql_page(client)).text):
        if url.startswith("static/vendor/"):
            assert integrity is not None, url
            digest = hashlib.sha384((STATIC / url.removeprefix("static/")).read_bytes()).digest()
            assert integrity == "sha384-" + base64.b64encode(digest).decode(), url
            checked += 1
    assert checked == 6


async def test_every_module_import_resolves(client: httpx.AsyncClient) -> None:
    """A misspelt import breaks the whole page in a browser, silently for HTTP tests."""
    for script in sorted(STATIC.glob("*.js")):
        source = (await client.get(f"/static/{script.name}")).text
        for target in re.findall(r'^import .* from "(\./[^"]+)";$', source, re.MULTILINE):
            response = await client.get(urljoin(f"http://gateway/static/{script.name}", target))
            assert response.status_code == 200, f"{script.name} imports {target}"
            assert media_type(response) in JAVASCRIPT


def test_vendored_files_match_their_checksums() -> None:
    listed = {}
    for line in (VENDOR / "SHA256SUMS").read_text().splitlines():
        digest, name = line.split(maxsplit=1)
        listed[name] = digest
    present = {
        str(path.relative_to(VENDOR))
        for path in VENDOR.rglob("*")
        if path.is_file() and path.name != "SHA256SUMS"
    }
    assert present == set(listed)
    for name, digest in listed.items():
        assert hashlib.sha256((VENDOR / name).read_bytes()).hexdigest() == digest, name


async def test_vendored_files_are_cached_for_good_and_gzipped(client: httpx.AsyncClient) -> None:
    path = "vendor/graphiql-3.8.3/graphiql.min.js"
    response = await client.get(f"/static/{path}", headers={"accept-encoding": "gzip"})
    assert response.status_code == 200
    assert response.headers["content-encoding"] == "gzip"
    assert "immutable" in response.headers["cache-control"]
    assert response.content == (STATIC / path).read_bytes()  # httpx decoded it
    assert len(gzip.compress(response.content)) < len(response.content) / 3

    own = await client.get("/static/dashboard.js")
    assert own.headers["cache-control"] == "no-cache"


async def test_unknown_and_outside_paths_are_not_served(client: httpx.AsyncClient) -> None:
    assert (await client.get("/static/nothing.js")).status_code == 404
    # Encoded, so that the client sends the dot segments as they are.
    assert (await client.get("/static/%2e%2e/cli.py")).status_code == 404
    assert (await client.get("/static/..%2fcli.py")).status_code == 404
    assert (await client.post("/static/dashboard.js")).status_code == 405


def test_package_data_ships_every_static_file() -> None:
    """``pip install .`` must carry the pages: setuptools globs package-data like this."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    patterns = config["tool"]["setuptools"]["package-data"]["gateway"]
    package = STATIC.parent
    shipped = {
        Path(package, name)
        for pattern in patterns
        for name in glob.glob(pattern, root_dir=package, recursive=True)
    }
    files = {path for path in STATIC.rglob("*") if path.is_file()}
    assert files <= shipped, sorted(map(str, files - shipped))
