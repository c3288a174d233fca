"""What the gateway logged as errors over a soak, counted by kind.

A soak is also a search for the errors only time and odd clients bring out
(a subscriber gone mid-message, a query cancelled as it ends). The gateway
logs JSON lines; each error line is reduced to its logger, the first words of
its message and the exception it names, with what differs from one line to
the next (task numbers, code addresses) left out, so that a thousand lines of
one cause count as one kind.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

__all__ = ["NOT_JSON", "errors"]

#: The kind of lines the gateway's logging did not write (the interpreter's own, on stderr).
NOT_JSON = "lines not logged as JSON"


def errors(log: Path) -> dict[str, int]:
    """The gateway's error lines, counted by kind."""
    counts: Counter[str] = Counter()
    for line in log.read_text(errors="replace").splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            counts[NOT_JSON] += 1
            continue
        if isinstance(entry, dict) and entry.get("level") in ("error", "critical"):
            counts[_kind(entry)] += 1
    return dict(counts)


def _kind(entry: dict[str, Any]) -> str:
    """An error line's logger, message and exception, without what differs per line."""
    message = re.sub(r"Task-\d+", "Task-N", str(entry.get("message", "")))
    message = re.sub(r" coro=<.*?(\w+\(\)) .*?>", r" \1", message.replace("\n", " "))
    raised = str(entry.get("exception") or "").strip().rsplit("\n", 1)[-1]
    return f"{entry.get('logger')}: {message}" + (f" ({raised})" if raised else "")
