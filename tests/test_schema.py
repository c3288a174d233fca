"""The committed schema.graphql is the code's schema, everything is described, and
every breaking change since the last release is in CHANGELOG.md."""

import re
import warnings
from pathlib import Path
from types import SimpleNamespace

from graphql import (
    BreakingChange,
    DangerousChange,
    GraphQLEnumType,
    GraphQLInputObjectType,
    GraphQLObjectType,
    build_schema,
    find_breaking_changes,
    find_dangerous_changes,
    get_named_type,
)

from gateway.api.documents import BYTES_PER_CHARACTER, Documents
from gateway.api.schema import SUBSCRIPTION_DOCUMENTS, schema, sdl
from gateway.cli import main
from gateway.domain.bounded import Memos

ROOT = Path(__file__).resolve().parents[1]
BUILTIN = {"String", "Int", "Float", "Boolean", "ID"}


def test_committed_schema_matches_code() -> None:
    committed = (ROOT / "schema.graphql").read_text(encoding="utf-8")
    assert committed == sdl(), (
        "schema.graphql is stale: run hypervisor-gateway export-schema -o schema.graphql"
    )


def test_export_schema_command_writes_the_sdl(tmp_path: Path) -> None:
    target = tmp_path / "schema.graphql"
    assert main(["export-schema", "--output", str(target)]) == 0
    assert target.read_text(encoding="utf-8") == sdl()


def test_every_type_field_argument_and_value_is_described() -> None:
    missing = []
    for name, kind in schema._schema.type_map.items():
        if name.startswith("__") or name in BUILTIN:
            continue
        if not kind.description:
            missing.append(name)
        if isinstance(kind, (GraphQLObjectType, GraphQLInputObjectType)):
            for field_name, field in kind.fields.items():
                if not field.description:
                    missing.append(f"{name}.{field_name}")
                for arg_name, arg in getattr(field, "args", {}).items():
                    if not arg.description:
                        missing.append(f"{name}.{field_name}({arg_name})")
        if isinstance(kind, GraphQLEnumType):
            missing += [f"{name}.{v}" for v, value in kind.values.items() if not value.description]
    assert missing == []


def test_amounts_are_never_int_or_float() -> None:
    """GraphQL Int is 32-bit and Float rounds: amounts must be Quantity."""
    amount_fields = {
        "physical",
        "reserved",
        "capacity",
        "booked",
        "free",
        "allocated",
        "unallocated",
        "amount",
        "total",
        "used",
    }
    for name, kind in schema._schema.type_map.items():
        if isinstance(kind, GraphQLObjectType) and not name.startswith("__"):
            for field_name, field in kind.fields.items():
                if field_name in amount_fields:
                    named = get_named_type(field.type).name
                    assert named not in ("Int", "Float"), f"{name}.{field_name}: {field.type}"


def _changes_since_release() -> tuple[list[BreakingChange], list[DangerousChange]]:
    released = build_schema((ROOT / "docs" / "schema.released.graphql").read_text("utf-8"))
    current = build_schema((ROOT / "schema.graphql").read_text("utf-8"))
    return find_breaking_changes(released, current), find_dangerous_changes(released, current)


def _unreleased() -> str:
    """CHANGELOG.md's section for what is not released yet."""
    text = (ROOT / "CHANGELOG.md").read_text("utf-8")
    return text.split("## Unreleased", 1)[1].split("\n## ", 1)[0]


def _coordinate(description: str) -> str:
    """The schema coordinate a change is about: ``Type.field``, else ``Type``."""
    found = re.search(r"\b([A-Za-z_]\w*\.\w+)\b", description) or re.search(
        r"\b([A-Z]\w*)\b(?= (?:was|changed))", description
    )
    assert found is not None, f"no schema coordinate in {description!r}"
    return found.group(1)


def _unlisted(changes: list[BreakingChange], unreleased: str) -> list[str]:
    return [c.description for c in changes if f"`{_coordinate(c.description)}`" not in unreleased]


def test_every_breaking_change_since_the_release_is_in_the_changelog() -> None:
    """Additions pass; a dangerous change (an argument's default, an enum value added)
    is a warning; a breaking one must be listed, by its coordinate, as unreleased."""
    breaking, dangerous = _changes_since_release()
    for change in dangerous:
        warnings.warn(f"dangerous schema change: {change.description}", stacklevel=1)
    assert _unlisted(breaking, _unreleased()) == [], "list these in CHANGELOG.md, Unreleased"


def test_the_changelog_check_finds_an_unlisted_change() -> None:
    released = build_schema("type Query { a: Int b(x: String): Int }")
    current = build_schema("type Query { a: String b(x: Int): Int c: Int }")
    changes = find_breaking_changes(released, current)
    unlisted = _unlisted(changes, "- `Query.a` is a String.")
    assert [_coordinate(d) for d in unlisted] == ["Query.b"]


def test_subscriptions_documents_are_kept_in_the_apps_memo() -> None:
    """Strawberry parses and validates each text once, in the memo of the context's store."""
    memos = Memos()
    kept = memos.add(Documents(SUBSCRIPTION_DOCUMENTS, max_bytes=2**20))
    context = SimpleNamespace(store=SimpleNamespace(memos=memos))
    for _ in range(2):
        assert schema.execute_sync("{ __typename }", context_value=context).data == {
            "__typename": "Query"
        }
    answer = schema.execute_sync("{ nope }", context_value=context)
    assert answer.errors and "nope" in answer.errors[0].message
    figures = kept.figures()
    # Six look-ups (a parse and a validation each time); only a text's first parse makes.
    assert (figures.entries, figures.hits) == (2, 4)
    assert figures.bytes == len("{ __typename }{ nope }") * BYTES_PER_CHARACTER
