"""Log output: JSON lines or text, and one request line that never carries a secret."""

from __future__ import annotations

import io
import json
import logging
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from graphql import GraphQLError
from strawberry.utils.logging import StrawberryLogger

from gateway.logs import JsonFormatter, TextFormatter, configure
from tests import fleet
from tests.support import serve

SECRET = "s3cr3t-t0ken-value"


def record(message: str = "hello %s", *args: Any, **extra: Any) -> logging.LogRecord:
    entry = logging.getLogger("gateway.test").makeRecord(
        "gateway.test", logging.INFO, __file__, 1, message, args or ("world",), None
    )
    entry.__dict__.update(extra)
    return entry


def test_json_lines_carry_the_extra_fields() -> None:
    line = JsonFormatter().format(record(status=200, request_id="abc", duration_ms=1.5))
    entry = json.loads(line)
    assert entry["message"] == "hello world"
    assert entry["level"] == "info"
    assert entry["logger"] == "gateway.test"
    assert entry["time"].endswith("+00:00")
    assert (entry["status"], entry["request_id"], entry["duration_ms"]) == (200, "abc", 1.5)
    assert "\n" not in line


def test_json_includes_the_traceback_in_one_line() -> None:
    try:
        raise RuntimeError("boom")
    except RuntimeError:
        entry = logging.getLogger("x").makeRecord(
            "x", logging.ERROR, __file__, 1, "failed", (), exc_info=sys.exc_info()
        )
    line = JsonFormatter().format(entry)
    assert "\n" not in line
    assert "RuntimeError: boom" in json.loads(line)["exception"]


def test_text_is_one_readable_line_with_key_values() -> None:
    line = TextFormatter().format(record(status=200, operation="Zones", note="two words"))
    assert line.endswith(
        'INFO gateway.test: hello world status=200 operation=Zones note="two words"'
    )


@pytest.fixture
def restore_logging() -> Iterator[None]:
    """configure() changes process-wide logging; put it back for the other tests."""
    names = ("", "uvicorn", "uvicorn.error", "uvicorn.access", "strawberry.execution")
    loggers = [logging.getLogger(name) for name in names]
    saved = [(lg.handlers[:], lg.filters[:], lg.level, lg.propagate, lg.disabled) for lg in loggers]
    yield
    for logger, (handlers, filters, level, propagate, disabled) in zip(loggers, saved, strict=True):
        logger.handlers[:] = handlers
        logger.filters[:] = filters
        logger.setLevel(level)
        logger.propagate = propagate
        logger.disabled = disabled


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.usefixtures("restore_logging")
@pytest.mark.parametrize(
    ("stream", "format", "json_expected"),
    [
        (io.StringIO(), "auto", True),
        (Terminal(), "auto", False),
        (Terminal(), "json", True),
        (io.StringIO(), "text", False),
    ],
)
def test_format_follows_the_terminal_unless_chosen(
    stream: io.StringIO, format: str, json_expected: bool
) -> None:
    configure("info", format, stream)
    logging.getLogger("gateway.test").info("hello")
    logging.getLogger("gateway.test").debug("not at info")
    (line,) = stream.getvalue().splitlines()
    if json_expected:
        assert json.loads(line)["message"] == "hello"
    else:
        assert line.endswith("INFO gateway.test: hello")


@pytest.mark.usefixtures("restore_logging")
def test_uvicorn_logs_through_the_same_handler_and_its_access_log_is_off() -> None:
    stream = io.StringIO()
    configure("info", "json", stream)
    logging.getLogger("uvicorn.error").info("started")
    logging.getLogger("uvicorn.access").info("GET / 200")
    (line,) = stream.getvalue().splitlines()
    assert json.loads(line)["logger"] == "uvicorn.error"


@pytest.mark.usefixtures("restore_logging")
@pytest.mark.parametrize("level", ["info", "warning"])
def test_a_clients_bad_query_is_not_an_error(level: str) -> None:
    """Strawberry (WebSocket) logs every GraphQL error at error level; a client's is info."""
    stream = io.StringIO()
    configure(level, "json", stream)
    StrawberryLogger.error(GraphQLError("Syntax Error: Expected Name, found <EOF>."))
    StrawberryLogger.error(GraphQLError("invalid cursor ''", original_error=GraphQLError("x")))
    StrawberryLogger.error(GraphQLError("boom", original_error=RuntimeError("a bug")))
    lines = [json.loads(line) for line in stream.getvalue().splitlines()]
    levels = [(entry["level"], entry["message"]) for entry in lines]
    client = [("info", "Syntax Error: Expected Name, found <EOF>."), ("info", "invalid cursor ''")]
    assert levels == [*(client if level == "info" else []), ("error", "boom")]
    assert "RuntimeError: a bug" in lines[-1]["exception"]


def test_an_unknown_format_is_refused() -> None:
    with pytest.raises(ValueError, match="yaml"):
        configure("info", "yaml")


async def test_one_line_per_request_without_secrets(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="gateway.http.access")
    async with serve(fleet.objects()) as (client, _):
        response = await client.post(
            "/graphql",
            json={
                "query": "query Find($name: String!) { hypervisor(name: $name) { name } }",
                "variables": {"name": SECRET},
            },
            headers={"authorization": f"Bearer {SECRET}"},
        )
        get = await client.get(
            "/graphql",
            params={
                "query": "query Q($n: String!) { hypervisor(name: $n) { name } }",
                "variables": json.dumps({"n": SECRET}),
            },
            headers={"authorization": f"Bearer {SECRET}"},
        )
        await client.get("/healthz")
        await client.get("/static/dashboard.css")
    post_line, get_line, probe, asset = (
        r for r in caplog.records if r.name == "gateway.http.access"
    )
    assert post_line.levelno == logging.INFO
    assert (post_line.method, post_line.path, post_line.status) == ("POST", "/graphql", 200)
    assert (post_line.operation, post_line.outcome) == ("Find", "ok")
    assert post_line.request_id == response.headers["x-request-id"]
    assert post_line.duration_ms > 0
    assert (get_line.path, get_line.operation) == ("/graphql", "Q")
    assert get_line.request_id == get.headers["x-request-id"]
    assert (probe.levelno, probe.path) == (logging.DEBUG, "/healthz")
    assert (asset.levelno, asset.status) == (logging.DEBUG, 200)
    assert not hasattr(probe, "operation")
    for entry in (post_line, get_line, probe):
        assert SECRET not in JsonFormatter().format(entry)
        assert SECRET not in TextFormatter().format(entry)


def test_the_command_refuses_an_unknown_format(capsys: pytest.CaptureFixture[str]) -> None:
    from gateway.cli import main

    assert main(["serve", "--demo", "--log-format", "yaml"]) == 2
    assert "log format 'yaml'" in capsys.readouterr().err
