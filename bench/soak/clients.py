"""The soak's own clients: failing, timing-out and abusive queries, subscribers that come and go.

Each kind is a :mod:`harness.crowd` role (a process of its own, through the
window, ending by itself at its close) and reports how each request ended,
counted by outcome: ``ok``, an error's ``extensions.code``, or what the client
saw instead (an HTTP status without a GraphQL answer, a dropped connection, no
answer in time). Queries go round the transports, HTTP POST and both WebSocket
protocols, so that a path that keeps something per connection or per protocol
is soaked too.
"""

from __future__ import annotations

import asyncio
import itertools
import random
import time
from collections import Counter
from collections.abc import Callable
from typing import TypeVar

import httpx
import websockets

from bench.soak.documents import ABUSE, FAILING, Document, timeout
from bench.soak.sockets import PROTOCOLS, Socket, closed, outcome
from harness.crowd import Gate, Window

__all__ = ["LIVE", "abuse", "failing", "timeouts", "visitors"]

#: What visitors subscribe to, in turn.
LIVE = (
    "subscription { hypervisorChanged { type hypervisor { name resourceVersion } } }",
    "subscription { fleetCapacityChanged(groupBy: ZONE) { key resources { name free } } }",
    "subscription Few($names: [String!]!) { hypervisorChanged(filter: {names: $names})"
    " { type hypervisor { name numInstances } } }",
)
#: Transports in turn: HTTP POST, then each WebSocket protocol.
TRANSPORTS = ("http", *PROTOCOLS)
T = TypeVar("T")
#: Outcomes by kind of request (``"kind over transport"``).
Outcomes = dict[str, dict[str, int]]


class _Asker:
    """One keep-alive HTTP client and one socket per protocol, each opened again when lost."""

    def __init__(self, url: str, seconds: float) -> None:
        self._url = url
        self._ws = url.replace("http", "ws", 1) + "/graphql"
        self._http = httpx.AsyncClient(base_url=url, timeout=seconds)
        self._sockets: dict[str, Socket] = {}
        self._seconds = seconds

    async def ask(self, transport: str, document: Document) -> str:
        """How one request over ``transport`` ended."""
        query, variables = document
        if transport == "http":
            return await self._post(query, variables)
        try:
            async with asyncio.timeout(self._seconds):
                if transport not in self._sockets:
                    self._sockets[transport] = await Socket.open(self._ws, transport)
                return outcome(await self._sockets[transport].answer(query, variables))
        except TimeoutError:
            self._drop(transport)
            return "no answer in time"
        except websockets.ConnectionClosed as error:
            self._drop(transport)
            return closed(error)
        except OSError:
            self._drop(transport)
            return "connection lost"

    async def _post(self, query: str, variables: dict[str, object]) -> str:
        try:
            response = await self._http.post(
                "/graphql", json={"query": query, "variables": variables}
            )
        except httpx.TimeoutException:
            return "no answer in time"
        except httpx.HTTPError:
            return "connection lost"
        try:
            answer = response.json()
        except ValueError:
            return f"HTTP {response.status_code}"
        return outcome(answer) if isinstance(answer, dict) else f"HTTP {response.status_code}"

    def _drop(self, transport: str) -> None:
        socket = self._sockets.pop(transport, None)
        if socket is not None:
            socket.abort()

    async def close(self) -> None:
        await self._http.aclose()
        for socket in self._sockets.values():
            await socket.close()


async def _every(
    gate: Gate,
    asker: _Asker,
    period: float,
    requests: Callable[[int], tuple[str, Document]],
) -> Outcomes:
    """``requests(n)`` (a kind and its document) every ``period`` seconds, round the
    transports, through the window; a late answer delays the next."""
    counts: dict[str, Counter[str]] = {}
    window = await gate.ready()
    due = window.start
    for n in itertools.count():
        if due >= window.stop:
            break
        await asyncio.sleep(max(0.0, due - time.monotonic()))
        kind, document = requests(n)
        transport = TRANSPORTS[n % len(TRANSPORTS)]
        ended = await asker.ask(transport, document)
        counts.setdefault(f"{kind} over {transport}", Counter())[ended] += 1
        due = max(due + period, time.monotonic())
    await asker.close()
    return {kind: dict(counted) for kind, counted in counts.items()}


def _turn(kinds: list[T], n: int) -> T:
    """The kind of the ``n``-th request: each kind goes round every transport in turn."""
    return kinds[n // len(TRANSPORTS) % len(kinds)]


async def failing(gate: Gate, url: str, period: float) -> Outcomes:
    """Every failing kind in turn, each spelled anew every time."""
    kinds = list(FAILING.items())

    def request(n: int) -> tuple[str, Document]:
        kind, (_, spelling) = _turn(kinds, n)
        return kind, spelling(n)

    return await _every(gate, _Asker(url, 30), period, request)


async def timeouts(gate: Gate, url: str, period: float, hosts: int, seconds: float) -> Outcomes:
    """A query over the time limit (``seconds``) every ``period`` seconds."""
    async with httpx.AsyncClient(base_url=url, timeout=30) as http:
        answer = (await http.post("/graphql", json={"query": "{ flavors { name } }"})).json()
    document = timeout([f["name"] for f in answer["data"]["flavors"]], hosts)
    return await _every(gate, _Asker(url, seconds + 60), period, lambda n: ("over time", document))


async def abuse(gate: Gate, url: str, period: float) -> Outcomes:
    """The issue's abuse, one request every ``period`` seconds (or back to back, when
    answers take longer), each kind in turn and never the same document twice."""
    kinds = list(ABUSE.items())

    def request(n: int) -> tuple[str, Document]:
        kind, spelling = _turn(kinds, n)
        return kind, spelling(n)

    return await _every(gate, _Asker(url, 120), period, request)


async def visitors(gate: Gate, url: str, count: int, stay: float, names: list[str]) -> Outcomes:
    """``count`` subscribers at a time that come and go through the window, each visit
    on the next protocol, to the next subscription, for up to ``stay`` seconds; each
    leaves one of three ways, at random: completing its subscription, closing the
    connection, or dropping it mid-stream. Outcomes count visits by how they ended,
    and the messages they got."""
    ws = url.replace("http", "ws", 1) + "/graphql"
    window = await gate.ready()
    await window.wait_start()
    results = await asyncio.gather(
        *(_visiting(ws, window, stay, names, random.Random(i)) for i in range(count))
    )
    counts: dict[str, Counter[str]] = {}
    for result in results:
        for kind, counted in result.items():
            counts.setdefault(kind, Counter()).update(counted)
    return {kind: dict(counted) for kind, counted in counts.items()}


async def _visiting(
    ws: str, window: Window, stay: float, names: list[str], rng: random.Random
) -> dict[str, Counter[str]]:
    counts: dict[str, Counter[str]] = {}
    for n in itertools.count():
        if time.monotonic() >= window.stop:
            break
        protocol = PROTOCOLS[n % len(PROTOCOLS)]
        leave = ("completes", "closes", "drops")[rng.randrange(3)]
        until = min(window.stop, time.monotonic() + rng.uniform(0, stay))
        query = LIVE[n % len(LIVE)]
        variables: dict[str, object] = {"names": rng.sample(names, min(3, len(names)))}
        ended, messages = await _visit(ws, protocol, query, variables, until, leave)
        counted = counts.setdefault(f"visit over {protocol}", Counter())
        counted[ended] += 1
        counted["messages"] += messages
    return counts


async def _visit(
    ws: str, protocol: str, query: str, variables: dict[str, object], until: float, leave: str
) -> tuple[str, int]:
    """One visit: how it ended (``leave``, or what ended it first) and the messages got."""
    messages = 0
    try:
        socket = await Socket.open(ws, protocol)
    except (websockets.WebSocketException, OSError, RuntimeError):
        await asyncio.sleep(max(0.0, until - time.monotonic()))  # the visit's time, not a spin
        return "refused", 0
    try:
        await socket.start("1", query, variables)
        async with asyncio.timeout_at(until):
            while True:
                kind, _ = await socket.receive()
                if kind != "next":
                    await socket.close()
                    return f"ended by the gateway ({kind})", messages
                messages += 1
    except TimeoutError:
        pass
    except websockets.ConnectionClosed as error:
        return closed(error), messages
    if leave == "drops":
        socket.abort()
    else:
        if leave == "completes":
            await socket.stop("1")
        await socket.close()
    return leave, messages
