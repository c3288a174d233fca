"""A synthetic fleet that changes by itself, for ``serve --demo`` and the benchmark."""

from __future__ import annotations

from gateway.sources.demo.source import DemoSource

__all__ = ["DemoSource"]
