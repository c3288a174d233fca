"""What the API server's refusals mean: the errors the informer acts on."""

from __future__ import annotations

import pytest

from gateway.sources.kubernetes.errors import (
    ApiError,
    Expired,
    NotFound,
    Unauthorized,
    raise_status,
    status_of,
)


@pytest.mark.parametrize(
    ("status", "http", "error"),
    [
        ({"code": 410, "reason": "Expired"}, None, Expired),
        ({}, 401, Unauthorized),
        ({}, 403, Unauthorized),
        ({"message": "404 page not found"}, 404, NotFound),  # no CRD for the resource
        ({"code": 500}, None, ApiError),
        (
            {"code": 504, "details": {"causes": [{"reason": "ResourceVersionTooLarge"}]}},
            None,
            Expired,
        ),
        ({"code": 504}, None, ApiError),
    ],
)
def test_status_objects_become_the_errors_the_informer_acts_on(
    status: dict[str, object], http: int | None, error: type[Exception]
) -> None:
    with pytest.raises(error):
        raise_status(status, http)


def test_an_error_body_that_is_not_a_status_is_quoted() -> None:
    assert status_of(b"<html>502 Bad Gateway</html>") == {"message": "<html>502 Bad Gateway</html>"}
    assert status_of(b"[1, 2]") == {}
    assert status_of(b"404 page not found\n") == {"message": "404 page not found"}
    assert status_of(b'{"message": "no"}') == {"message": "no"}


@pytest.mark.parametrize(
    ("details", "seconds"),
    [
        ({"retryAfterSeconds": 3}, 3.0),
        ({"retryAfterSeconds": "2"}, 2.0),
        ({"retryAfterSeconds": "Wed, 21 Oct 2026 07:28:00 GMT"}, None),  # only seconds
        ({"retryAfterSeconds": 0}, None),
        ({"retryAfterSeconds": -5}, None),
        ({}, None),
    ],
)
def test_a_servers_retry_after_travels_with_the_error(
    details: dict[str, object], seconds: float | None
) -> None:
    with pytest.raises(ApiError) as raised:
        raise_status({"code": 429, "reason": "TooManyRequests", "details": details})
    assert raised.value.retry_after == seconds


def test_the_retry_after_header_wins_over_the_status_details() -> None:
    with pytest.raises(ApiError) as raised:
        raise_status({"code": 429, "details": {"retryAfterSeconds": 9}}, 429, "2")
    assert raised.value.retry_after == 2.0
