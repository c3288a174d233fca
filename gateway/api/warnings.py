"""Warnings: answers that are right as asked, but likely not what was meant.

A resource name no host reports (``cpuz`` for ``cpu``) is a valid question: no
host fits it, every host sorts last by it. Refusing it would be wrong (a GPU
class may not be in the fleet yet), answering silently leaves a typo to look
like an empty fleet. So the answer goes out with a warning in the response's
top-level ``extensions.warnings``, each with a code and a message.
"""

from __future__ import annotations

from collections.abc import Iterable

from gateway.api.codes import Code
from gateway.api.context import Context
from gateway.domain import fleet

__all__ = ["warn_unknown_resources"]

#: Known names a warning lists, at most.
SHOWN = 12


def warn_unknown_resources(context: Context, names: Iterable[str | None]) -> None:
    """Warn of each of ``names`` no host of the fleet reports (a read of the ledger of
    the fleet's resource names, not of every host)."""
    asked = {name for name in names if name}
    if not asked:
        return
    known = fleet.resource_names(context.ledger(fleet.resource_tally))
    for name in sorted(asked - set(known)):
        shown = ", ".join(known[:SHOWN])
        message = f"no hypervisor reports a resource named {name!r} (the fleet's: {shown})"
        context.warn(Code.UNKNOWN_RESOURCE, message)
