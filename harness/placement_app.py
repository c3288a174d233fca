"""OpenStack Placement's own WSGI app on loopback, run by :mod:`harness.placement`.

It runs under the interpreter of ``.venv-placement`` (scripts/test installs
``harness/placement-requirements.lock`` there), never the gateway's: Placement's
dependencies are not the gateway's. Run with ``python -P`` so that this file's
directory, which holds ``harness/placement.py``, does not shadow the ``placement``
package.

The app is what ``placement-api`` serves (``placement.deploy.loadapp``): the
database is an in-memory SQLite schema synced at start, with the standard traits
and resource classes; ``noauth2`` takes the ``x-auth-token`` header as the caller
(``admin`` is an admin). wsgiref serves one request at a time, which is all a test
asks of it, and keeps the one in-memory database on one thread.
"""

from __future__ import annotations

import argparse
from wsgiref import simple_server

from oslo_config import cfg
from placement import conf, db_api, deploy


def _config() -> cfg.ConfigOpts:
    config = cfg.ConfigOpts()
    conf.register_opts(config)
    config.set_override("connection", "sqlite://", group="placement_database")
    config.set_override("sync_on_startup", True, group="placement_database")
    config.set_override("auth_strategy", "noauth2", group="api")
    config([], project="placement", default_config_files=[])
    db_api.configure(config)
    return config


class _QuietHandler(simple_server.WSGIRequestHandler):
    """No access log: a fleet's load is a few hundred requests."""

    def log_message(self, format: str, *args: object) -> None:
        pass


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, required=True)
    port: int = parser.parse_args().port
    app = deploy.loadapp(_config())
    server = simple_server.make_server("127.0.0.1", port, app, handler_class=_QuietHandler)
    server.serve_forever()


if __name__ == "__main__":
    main()
