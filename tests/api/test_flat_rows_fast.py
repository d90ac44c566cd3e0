"""``FlatRows``' generated row builders and date-time fast paths, and ``FastJSONRenderer``'s
shortcuts, must give exactly what DRF gives: the same dicts (keys, order, values) and bytes."""

from __future__ import annotations

import datetime
from typing import Any

import pytest
from django.test import override_settings
from django.utils import timezone
from rest_framework import serializers
from rest_framework.renderers import JSONRenderer
from rest_framework.test import APIRequestFactory

from config.api.renderers import FastJSONRenderer
from config.api.schema import FlatRows, ResponseSerializer, _converter, _rows_builder
from workspaces.models import ApiToken, Plan, User

pytestmark = pytest.mark.django_db

ZONES = ["UTC", "Europe/Berlin", "America/St_Johns"]  # St. John's: a half-hour offset


class TokenRowSerializer(ResponseSerializer):
    # Nullable UUID and date-time columns, a primary key that is text.
    id = serializers.CharField()
    workspace_id = serializers.CharField(allow_null=True)
    name = serializers.CharField()
    created_at = serializers.DateTimeField()
    expires_at = serializers.DateTimeField(allow_null=True)
    revoked_at = serializers.DateTimeField(allow_null=True)


class PlanRowSerializer(ResponseSerializer):
    # A nullable integer and a boolean (through the field's own ``to_representation``).
    code = serializers.CharField()
    name = serializers.CharField()
    max_connected_accounts = serializers.IntegerField(allow_null=True)
    is_paid = serializers.BooleanField()


TOKEN_ROWS = FlatRows(TokenRowSerializer, ApiToken)
PLAN_ROWS = FlatRows(PlanRowSerializer, Plan)


def ordered(data: Any) -> list[list[tuple[str, Any]]]:
    return [list(item.items()) for item in data]


def seed_tokens(user: User, workspace: Any) -> None:
    base = datetime.datetime(2026, 3, 1, 12, 0, 0, tzinfo=datetime.UTC)
    for number, micros in enumerate((0, 1, 120000, 999999, 10)):
        ApiToken.objects.create(
            id=f"tok{number}",
            user=user,
            name=f"token {number} \u2014 \u2018quoted\u2019",
            secret_hash="0" * 64,
            workspace=workspace if number % 2 else None,
            created_at=base - datetime.timedelta(days=number, microseconds=micros),
            expires_at=None if number % 3 else base + datetime.timedelta(days=30 * number),
            revoked_at=base + datetime.timedelta(hours=number) if number == 4 else None,
        )


def test_generated_rows_are_drfs_in_each_zone_in_turn(user: User, workspace: Any) -> None:
    # One FlatRows serves every zone in turn: its cached converters and builders follow.
    seed_tokens(user, workspace)
    request = APIRequestFactory().get("/api/v1/anything", HTTP_HOST="testserver")
    tokens = ApiToken.objects.order_by("id")
    for zone in [*ZONES, "UTC"]:
        with timezone.override(zone):
            expected = TokenRowSerializer(
                list(tokens), many=True, context={"request": request}
            ).data
            fast = TOKEN_ROWS.represent(TOKEN_ROWS.values(tokens), request)
        assert ordered(fast) == ordered(expected), zone
        assert JSONRenderer().render(fast) == JSONRenderer().render(expected)
    assert any(row["workspace_id"] is None for row in fast)
    assert any(row["expires_at"] is None for row in fast)


def test_generated_rows_follow_the_date_time_format_setting(user: User, workspace: Any) -> None:
    seed_tokens(user, workspace)
    request = APIRequestFactory().get("/api/v1/anything")
    tokens = ApiToken.objects.order_by("id")
    with override_settings(REST_FRAMEWORK={"DATETIME_FORMAT": "%Y-%m-%d %H:%M"}):
        expected = TokenRowSerializer(list(tokens), many=True, context={"request": request}).data
        fast = TOKEN_ROWS.represent(TOKEN_ROWS.values(tokens), request)
    assert ordered(fast) == ordered(expected)
    assert fast[0]["created_at"] == "2026-03-01 12:00"


def test_generated_rows_are_drfs_without_time_zone_support(user: User, workspace: Any) -> None:
    seed_tokens(user, workspace)
    request = APIRequestFactory().get("/api/v1/anything")
    tokens = ApiToken.objects.order_by("id")
    with override_settings(USE_TZ=False):
        expected = TokenRowSerializer(list(tokens), many=True, context={"request": request}).data
        fast = TOKEN_ROWS.represent(TOKEN_ROWS.values(tokens), request)
    assert ordered(fast) == ordered(expected)
    assert fast[0]["created_at"] == "2026-03-01T12:00:00"


def test_generated_rows_convert_integers_and_booleans_as_drf(db: Any) -> None:
    Plan.objects.create(code="limited", name="Limited", max_connected_accounts=3, is_paid=True)
    Plan.objects.create(code="open", name="Open", max_connected_accounts=None, is_paid=False)
    request = APIRequestFactory().get("/api/v1/anything")
    plans = Plan.objects.order_by("code")
    expected = PlanRowSerializer(list(plans), many=True, context={"request": request}).data
    fast = PLAN_ROWS.represent(PLAN_ROWS.values(plans), request)
    assert ordered(fast) == ordered(expected)
    limits = {row["code"]: row["max_connected_accounts"] for row in fast}
    assert (limits["limited"], limits["open"]) == (3, None)


def test_a_row_builder_passes_only_values_through_converters() -> None:
    build = _rows_builder(("a", "b", "c"), (0, 2))
    rows = [(1, "x", 2), (None, "y", None)]
    assert ordered(build(rows, "u", lambda v: v * 10, str)) == [
        [("$schema", "u"), ("a", 10), ("b", "x"), ("c", "2")],
        [("$schema", "u"), ("a", None), ("b", "y"), ("c", None)],
    ]
    with pytest.raises(ValueError, match="shorter"):  # a strict zip of names and values
        build([(1, 2)], "u", str, str)
    assert ordered(_rows_builder(("only",), ())([("v",)], "u")) == [
        [("$schema", "u"), ("only", "v")]
    ]
    assert TOKEN_ROWS.represent(iter([]), None) == []


@pytest.mark.parametrize("zone", ZONES)
def test_date_time_objects_are_drfs(zone: str) -> None:
    field = serializers.DateTimeField()
    values = [
        datetime.datetime(2026, 3, 1, 12, 0, 0, 123456, tzinfo=datetime.UTC),
        datetime.datetime(
            2026, 3, 1, 12, 0, 0, tzinfo=datetime.timezone(datetime.timedelta(hours=2))
        ),
        datetime.datetime(2026, 3, 1, 12, 0, 0),  # noqa: DTZ001 (naive: DRF's own handling)
    ]
    with timezone.override(zone):
        convert = _converter(field, None, timezone.get_current_timezone())
        for value in values:
            assert convert(value) == field.to_representation(value)


# --- Renderer ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "em \u2014 dash, \u2018curly\u2019 quotes, ellipsis \u2026, euro \u20ac",  # same lead byte
        "mixed \u2028 with \u2014 and \u2029 and \u2019",
        "\u2029\u2028\u2028",
        "\u2027\u202a \u2020",  # neighbours of the separators
    ],
)
def test_fast_renderer_escapes_only_the_separators(text: str) -> None:
    data = [{"text": text, "n": number} for number in range(300)]
    assert FastJSONRenderer().render(data) == JSONRenderer().render(data)


@pytest.mark.parametrize(
    ("accepted", "context"),
    [
        ("application/json", {}),
        ("application/json", {"indent": 2}),
        ("application/json; charset=utf-8", {}),
        ("application/json; indent=4", {}),
        ("application/json;indent=0", {"indent": 3}),
        (None, {"indent": 2}),
        ("", {}),
    ],
)
def test_fast_renderer_indents_as_drf(accepted: str | None, context: dict[str, Any]) -> None:
    data = {"a": [1, {"b": "c"}]}
    renderer = FastJSONRenderer()
    assert renderer.get_indent(accepted, context) == JSONRenderer().get_indent(accepted, context)
    assert renderer.render(data, accepted, context) == JSONRenderer().render(
        data, accepted, context
    )
