"""Reading requests: JSON nesting is bounded before it is decoded."""

from __future__ import annotations

import pytest

from gateway.http.request import TooDeep, loads
from tests import fleet
from tests.test_limits import gateway

DEEP = "[" * 1000 + "]" * 1000


def test_nesting_is_measured_outside_strings() -> None:
    assert loads('{"a": "[[[[[[[[[[", "b": [[1]]}', 3) == {"a": "[" * 10, "b": [[1]]}
    assert loads('["\\"[[[[[["]', 2) == ['"[[[[[[']
    assert loads("[" * 64 + "]" * 64, 64) == loads("[" * 64 + "]" * 64, 100)
    with pytest.raises(TooDeep, match="JSON nested deeper than 64 levels"):
        loads("[" * 65 + "]" * 65, 64)
    with pytest.raises(TooDeep):
        loads(DEEP, 64)  # json.loads itself would raise RecursionError here


@pytest.mark.parametrize(
    ("body", "refused"),
    [
        ('{"v": NaN}', "NaN is not JSON"),
        ('{"v": -Infinity}', "-Infinity is not JSON"),
        ('{"v": ' + "9" * 5000 + "}", "an integer of more than 4300 digits"),
        ('{"v": "x"}'.encode("utf-16"), "codec can't decode"),
    ],
)
def test_only_json_is_read(body: str | bytes, refused: str) -> None:
    """What json.loads takes beyond the standard (UTF-16, NaN) is refused, and an
    integer too long for Python to read is said so in words about the request."""
    with pytest.raises(ValueError, match=refused):
        loads(body, 64)
    assert loads('{"v": -' + "9" * 4300 + "}", 64) == {"v": -int("9" * 4300)}


@pytest.mark.parametrize("accept", ["application/json", "application/graphql-response+json"])
async def test_deep_json_is_a_graphql_shaped_400(accept: str) -> None:
    body = f'{{"query": "{{ __typename }}", "variables": {{"v": {DEEP}}}}}'
    async with gateway(fleet.objects()) as client:
        posted = await client.post(
            "/graphql", content=body, headers={"content-type": "application/json", "accept": accept}
        )
        got = await client.get(
            "/graphql",
            params={"query": "{ __typename }", "variables": f'{{"v": {DEEP}}}'},
            headers={"accept": accept},
        )
    for response in (posted, got):
        assert response.status_code == 400
        assert response.headers["content-type"].startswith(accept)
        [error] = response.json()["errors"]
        assert "JSON nested deeper than 64 levels" in error["message"]
