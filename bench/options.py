"""The command-line options every benchmark shares: the fleets it loads."""

from __future__ import annotations

import argparse

__all__ = ["fleet_parser", "sizes"]


def fleet_parser(
    prog: str, description: str | None, default_sizes: str, *, bookings: bool = True
) -> argparse.ArgumentParser:
    """A parser with ``--sizes`` (fleet sizes, comma-separated, read by :func:`sizes`) and,
    for a benchmark that makes its fleets itself, ``--bookings`` (per host)."""
    parser = argparse.ArgumentParser(prog=prog, description=description)
    parser.add_argument(
        "--sizes",
        default=default_sizes,
        help=f"comma-separated fleet sizes (default {default_sizes})",
    )
    if bookings:
        parser.add_argument(
            "--bookings", type=int, default=40, help="bookings per host (default 40)"
        )
    return parser


def sizes(text: str) -> list[int]:
    """The fleet sizes of a ``--sizes`` value."""
    return [int(size) for size in text.split(",")]
