"""Log output: JSON lines for log collectors, readable text for people.

In a pod, stderr goes to a collector that indexes fields, so each record is one
JSON object; in a terminal a person reads it, so it is one line of text with the
same fields as ``key=value``. ``auto`` picks by whether stderr is a terminal.

Fields come from ``extra=``: the request log passes method, path, status, operation,
duration and request id. Nothing here reads headers, tokens or query variables:
what is not passed in cannot leak out.
"""

from __future__ import annotations

import json
import logging
import sys
from datetime import UTC, datetime
from typing import Any, TextIO

__all__ = ["FORMATS", "ClientErrors", "JsonFormatter", "TextFormatter", "configure"]

FORMATS = ("auto", "json", "text")

#: Attributes every LogRecord has; anything else on a record came from ``extra=``.
_STANDARD = frozenset(logging.LogRecord("", 0, "", 0, "", None, None).__dict__) | {
    "message",
    "asctime",
    "color_message",
    "taskName",
}


def fields(record: logging.LogRecord) -> dict[str, Any]:
    """The ``extra=`` fields of a record, in the order they were given."""
    return {k: v for k, v in record.__dict__.items() if k not in _STANDARD}


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time, level, logger, message, then the extra fields."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
            **fields(record),
        }
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry, ensure_ascii=False, default=str)


class TextFormatter(logging.Formatter):
    """``time LEVEL logger: message key=value ...`` on one line (tracebacks below)."""

    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)s %(name)s: %(message)s")

    def formatMessage(self, record: logging.LogRecord) -> str:
        line = super().formatMessage(record)
        extra = " ".join(f"{key}={_text(value)}" for key, value in fields(record).items())
        return f"{line} {extra}" if extra else line


def _text(value: Any) -> str:
    text = str(value)
    return json.dumps(text) if not text or any(c.isspace() or c == '"' for c in text) else text


def configure(level: str = "info", format: str = "auto", stream: TextIO | None = None) -> None:
    """Send every logger's records (uvicorn's included) to ``stream`` in one format."""
    if format not in FORMATS:
        raise ValueError(f"log format {format!r}: expected one of {', '.join(FORMATS)}")
    stream = stream or sys.stderr
    if format == "auto":
        format = "text" if stream.isatty() else "json"
    handler = logging.StreamHandler(stream)
    handler.setFormatter(JsonFormatter() if format == "json" else TextFormatter())
    root = logging.getLogger()
    for old in root.handlers[:]:
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level.upper())
    # uvicorn's loggers keep their records to themselves only if it configures them;
    # started with log_config=None they propagate here. Its access log is replaced
    # by the gateway's own request log, which knows the GraphQL operation.
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access"):
        logger = logging.getLogger(name)
        logger.handlers.clear()
        logger.setLevel(logging.NOTSET)
        logger.propagate = True
    logging.getLogger("uvicorn.access").disabled = True
    strawberry = logging.getLogger("strawberry.execution")
    if not any(isinstance(f, ClientErrors) for f in strawberry.filters):
        strawberry.addFilter(ClientErrors())


class ClientErrors(logging.Filter):
    """Strawberry logs every GraphQL error at error level, a client's bad query too.

    On WebSocket it executes, and logs a document that does not parse or validate
    as if the gateway had failed. An error without a cause other than a
    GraphQLError is the client's: it is kept at info level, where the request log
    is, and an alert on error lines sees only the gateway's own failures.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        cause = record.exc_info[1] if record.exc_info else None
        if record.levelno < logging.ERROR or (cause is not None and not _graphql(cause)):
            return True
        record.levelno, record.levelname = logging.INFO, "INFO"
        record.exc_info = record.exc_text = None
        return logging.getLogger(record.name).isEnabledFor(logging.INFO)


def _graphql(error: BaseException) -> bool:
    from graphql import GraphQLError

    return isinstance(error, GraphQLError)
