"""What the soak asks besides the churn readers: documents that fail, that time out, that abuse.

Each failing document is refused for one reason a client meets (the code it
must answer with is beside it), and each is spelled differently every time
(a counter in a name, an alias, an amount): whatever the gateway remembers per
spelling (parsed documents, quantities, flavors asked for) is fed a stream of
new ones, as a fleet of buggy clients would feed it.

The abuse is the issue's: 200-host pages with 50 aliases of ``instances``
(answers of some 15 MB, too large for the response cache), every one with its
own alias names, and filters that are new every time (a canFit amount, a
label selector, a set of names), each a selection and a total of its own.
"""

from __future__ import annotations

from collections.abc import Callable

__all__ = ["ABUSE", "FAILING", "Document", "timeout"]

#: A query and its variables.
Document = tuple[str, dict[str, object]]

#: Aliases per abusive page: the gateway's limit (one more is TOO_MANY_ALIASES).
ALIASES = 50
#: Nesting past the gateway's default depth limit (15).
TOO_DEEP = 9


def _malformed(n: int) -> Document:
    return f"{{ hypervisors(first: {n % 100 + 1} {{ nodes {{ name }} }} }}", {}


def _invalid(n: int) -> Document:
    return f"{{ hypervisors(first: 1) {{ nodes {{ name field{n} }} }} }}", {}


def _bad_quantity(n: int) -> Document:
    query = (
        "query Fit($a: Quantity!) { hypervisors("
        'filter: {canFit: [{resource: "memory", amount: $a}]}, first: 1) { totalCount } }'
    )
    return query, {"a": f"{n} parsecs"}


def _unknown_flavor(n: int) -> Document:
    return f'{{ slots(flavor: "no-such-flavor-{n}") {{ key slots }} }}', {}


def _too_deep(n: int) -> Document:
    inner = "name"
    for _ in range(TOO_DEEP):
        inner = f"consumers {{ hypervisor {{ {inner} }} }}"
    return f"{{ hypervisors(first: {n % 10 + 1}) {{ nodes {{ {inner} }} }} }}", {}


def _too_many_aliases(n: int) -> Document:
    aliases = " ".join(f"n{n}_{i}: name" for i in range(ALIASES + 1))
    return f"{{ hypervisors(first: 1) {{ nodes {{ {aliases} }} }} }}", {}


#: Each failing kind, the code it is answered with, and its n-th spelling.
FAILING: dict[str, tuple[str, Callable[[int], Document]]] = {
    "malformed": ("GRAPHQL_PARSE_FAILED", _malformed),
    "invalid": ("GRAPHQL_VALIDATION_FAILED", _invalid),
    "bad quantity": ("BAD_QUANTITY", _bad_quantity),
    "unknown flavor": ("UNKNOWN_FLAVOR", _unknown_flavor),
    "too deep": ("QUERY_TOO_DEEP", _too_deep),
    "too many aliases": ("TOO_MANY_ALIASES", _too_many_aliases),
}


def timeout(flavors: list[str], hosts: int) -> Document:
    """Every host judged for 50 flavor and project pairs: answers of a few MB, far more
    work than the soak's time limit allows (22 s at 5,000 hosts on an idle machine)."""
    judged = " ".join(
        f'e{i}: eligibility(flavor: "{flavors[i % len(flavors)]}", project: "p{i}") '
        "{ eligible slots }"
        for i in range(ALIASES)
    )
    return f"{{ hypervisors(first: {hosts}) {{ nodes {{ name {judged} }} }} }}", {}


def _aliased_page(n: int) -> Document:
    """200 hosts with 50 aliases of instances, each alias named anew."""
    aliases = " ".join(f"q{n}_{i}: instances {{ id name active }}" for i in range(ALIASES))
    return f"{{ hypervisors(first: 200) {{ nodes {{ name {aliases} }} }} }}", {}


def _new_filter(n: int) -> Document:
    """A fit count, zone totals and a page, each under a filter never asked before."""
    query = (
        "query Filters($a: Quantity!, $l: LabelSelector!, $names: [String!]!) {"
        ' fit: hypervisors(filter: {canFit: [{resource: "memory", amount: $a}]}, first: 1)'
        " { totalCount }"
        " labelled: fleetCapacity(filter: {labelSelector: $l}, groupBy: ZONE)"
        " { key hypervisorCount }"
        " named: hypervisors(filter: {names: $names}, first: 10) { nodes { name } } }"
    )
    names = [f"host-{n}-{i}" for i in range(10)]
    return query, {"a": f"{1024 + n}Mi", "l": f"!soak/label-{n}", "names": names}


#: Each abusive kind and its n-th spelling.
ABUSE: dict[str, Callable[[int], Document]] = {
    "aliased page": _aliased_page,
    "new filter": _new_filter,
}
