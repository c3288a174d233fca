"""A synthetic fleet that changes by itself, for ``serve --demo`` and the benchmark."""
