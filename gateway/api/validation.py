"""The specification's validation rules, with codes a client can branch on.

graphql-core's rules say what is wrong in words only. Two of them decide cases
a client must tell apart from a typo in a field name, and are replaced here by
subclasses that say more:

* a literal a custom scalar refuses (a quantity, a cursor, a UUID...) keeps the
  scalar's own code, and the message says which argument and where in its value
  (``slots(request:) at [0].amount``): graphql-core reports the scalar's words
  alone, without even a location;
* an operation type the schema does not have: a mutation is told the gateway has
  none (MUTATIONS_NOT_SUPPORTED), not just that it is unsupported.

Every other validation error gets GRAPHQL_VALIDATION_FAILED where it is answered
(gateway.http.operations).
"""

from __future__ import annotations

from typing import Any

from graphql import (
    SKIP,
    ArgumentNode,
    FieldNode,
    GraphQLError,
    GraphQLInputType,
    KnownOperationTypesRule,
    OperationType,
    ValueNode,
    ValuesOfCorrectTypeRule,
    VariableDefinitionNode,
    VisitorAction,
    specified_rules,
)
from graphql.pyutils import print_path_list
from graphql.utilities.validate_input_value import validate_input_literal
from graphql.validation import ASTValidationRule

from gateway.api.codes import Code

__all__ = ["ArgumentValuesRule", "OperationTypesRule", "specified"]


class ArgumentValuesRule(ValuesOfCorrectTypeRule):
    """Values of the correct type; a refusal names the argument and the place in it."""

    #: The argument (or variable default) whose value is being checked.
    where = ""

    def enter_argument(
        self, node: ArgumentNode, _key: Any, _parent: Any, _path: Any, ancestors: list[Any]
    ) -> None:
        owner = ancestors[-1]  # the field or directive the argument is given to
        name = owner.name.value if isinstance(owner, FieldNode) else f"@{owner.name.value}"
        self.where = f"{name}({node.name.value}:)"

    def enter_variable_definition(self, node: VariableDefinitionNode, *_: Any) -> None:
        self.where = f"default of ${node.variable.name.value}"

    def is_valid_value_node(
        self, node: ValueNode, input_type: GraphQLInputType | None
    ) -> VisitorAction:
        """The parent's check, with an ``on_error`` that keeps the path it is given."""
        if input_type:

            def on_error(error: GraphQLError, path: list[str | int]) -> None:
                self.report_error(self._located(error, node, path))

            hide = self.context.hide_suggestions
            validate_input_literal(node, input_type, on_error, None, None, hide)
        return SKIP

    def _located(self, error: GraphQLError, node: ValueNode, path: list[str | int]) -> GraphQLError:
        if error.nodes:  # graphql-core's own message, which shows the value and its place
            return error
        place = f"{self.where}{print_path_list(path)}"
        message = f"{place}: {error.message}" if place else error.message
        return GraphQLError(message, node, extensions=error.extensions)


class OperationTypesRule(KnownOperationTypesRule):
    """Known operation types; a mutation is told that the gateway only reads."""

    def report_error(self, error: GraphQLError) -> None:
        node = error.nodes[0] if error.nodes else None
        if getattr(node, "operation", None) is OperationType.MUTATION:
            error = GraphQLError(
                "This schema has no mutations: the gateway only reads the fleet "
                "(change it through Kubernetes).",
                node,
                extensions={"code": Code.MUTATIONS_NOT_SUPPORTED.value},
            )
        super().report_error(error)


_REPLACED: dict[type[ASTValidationRule], type[ASTValidationRule]] = {
    ValuesOfCorrectTypeRule: ArgumentValuesRule,
    KnownOperationTypesRule: OperationTypesRule,
}


def specified() -> tuple[type[ASTValidationRule], ...]:
    """graphql-core's specified rules, with the two above in their places."""
    return tuple(_REPLACED.get(rule, rule) for rule in specified_rules)
