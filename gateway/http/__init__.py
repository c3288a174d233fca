"""The ASGI app: GraphQL over HTTP and WebSocket, auth, response cache, metrics,
static pages and the server.

It builds on :mod:`gateway.api` and :mod:`gateway.store`; only the CLI imports it.
"""
