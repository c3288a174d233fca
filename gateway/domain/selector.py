"""Kubernetes label selectors (``zone=a,tier!=db,env in (prod,qa),!legacy``).

The same syntax ``kubectl get -l`` accepts, so an operator can paste a selector
from their usual tooling into a GraphQL filter.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping

__all__ = ["SelectorError", "parse_selector"]

Matcher = Callable[[Mapping[str, str]], bool]

_KEY = r"[A-Za-z0-9]([-A-Za-z0-9_./]*[A-Za-z0-9])?"
_VALUE = r"([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?"
_SET = re.compile(rf"\s*(?P<key>{_KEY})\s+(?P<op>in|notin)\s*\((?P<values>[^()]*)\)\s*")
_EQUALITY = re.compile(rf"\s*(?P<key>{_KEY})\s*(?P<op>==|=|!=)\s*(?P<value>{_VALUE})\s*")
_EXISTS = re.compile(rf"\s*(?P<neg>!)?\s*(?P<key>{_KEY})\s*")
_VALID_VALUE = re.compile(_VALUE)


class SelectorError(ValueError):
    """A selector that does not follow the Kubernetes syntax."""


def parse_selector(text: str) -> Matcher:
    """Compile a selector into a predicate over a label mapping. Raises SelectorError."""
    matchers = [_requirement(part) for part in _split(text) if part.strip()]
    return lambda labels: all(m(labels) for m in matchers)


def _split(text: str) -> list[str]:
    """Split on commas that are not inside an ``in (...)`` value set."""
    parts, depth, start = [], 0, 0
    for i, char in enumerate(text):
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
            if depth < 0:
                raise SelectorError(f"unbalanced ')' in selector {text!r}")
        elif char == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    if depth:
        raise SelectorError(f"unbalanced '(' in selector {text!r}")
    parts.append(text[start:])
    if len(parts) > 1 and any(not p.strip() for p in parts):
        raise SelectorError(f"empty requirement in selector {text!r}")
    return parts


def _requirement(part: str) -> Matcher:
    if match := _SET.fullmatch(part):
        key = match["key"]
        values = {v.strip() for v in match["values"].split(",")}
        if not all(_VALID_VALUE.fullmatch(v) for v in values):
            raise SelectorError(f"invalid value in {part.strip()!r}")
        if match["op"] == "in":
            return lambda labels: labels.get(key) in values
        return lambda labels: labels.get(key) not in values
    if match := _EQUALITY.fullmatch(part):
        key, value = match["key"], match["value"]
        if match["op"] == "!=":
            return lambda labels: labels.get(key) != value
        return lambda labels: labels.get(key) == value
    if match := _EXISTS.fullmatch(part):
        key = match["key"]
        if match["neg"]:
            return lambda labels: key not in labels
        return lambda labels: key in labels
    raise SelectorError(f"invalid requirement {part.strip()!r} in label selector")
