"""Values of the gateway's custom scalars for generated queries (hypothesis-graphql).

Each strategy draws values the gateway accepts: a generated query is then refused
only where a rule beyond its types says so. Used by tests/test_executor.py and, as
schemathesis's scalar strategies, by tests/fuzz_hooks.py.
"""

from __future__ import annotations

import graphql
from hypothesis import strategies as st
from hypothesis_graphql import nodes

from gateway.api.pagination import Position, encode_cursor

_NAMES = st.sampled_from(["", "node-000", "node-050", "node-199", "zz"]) | st.text(max_size=8)
_CURSORS = st.builds(
    Position,
    st.sampled_from([0, 1]),
    st.decimals(
        allow_nan=False, allow_infinity=False, places=2, max_value=10**6, min_value=-(10**6)
    ),
    _NAMES,
).map(encode_cursor)
_QUANTITIES = st.sampled_from(["0", "1", "4", "500m", "16Gi", "1e3", "+2", ".5"]) | st.integers(
    min_value=0, max_value=2**40
).map(str)
_RESOURCES = st.sampled_from(["cpu", "memory", "DISK_GB", "VGPU", "CUSTOM_X_", "nvidia.com/gpu"])
_SELECTORS = st.sampled_from(
    [
        "",
        "topology.kubernetes.io/zone=qa-de-1a",
        "topology.kubernetes.io/zone in (qa-de-1a,qa-de-1b),!missing",
        "kubernetes.metal.cloud.sap/bb!=bb001",
        "worker.garden.sapcloud.io/group",
    ]
)


def strategies() -> dict[str, st.SearchStrategy[graphql.ValueNode]]:
    """Strategies of value nodes by scalar name, as hypothesis-graphql takes them."""
    return {
        "Quantity": _QUANTITIES.map(nodes.String),
        "Cursor": _CURSORS.map(nodes.String),
        "UUID": st.uuids().map(str).map(nodes.String),
        "ResourceName": _RESOURCES.map(nodes.String),
        "LabelSelector": _SELECTORS.map(nodes.String),
    }
