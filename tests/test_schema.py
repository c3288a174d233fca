"""The committed schema.graphql is the code's schema, and everything is described."""

from pathlib import Path

from graphql import GraphQLEnumType, GraphQLInputObjectType, GraphQLObjectType, get_named_type

from gateway.api.schema import schema, sdl
from gateway.cli import main

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
