"""``parse_query`` validates simple query serializers with shared, bound fields: the result must
be exactly the full serializer's, every invalid query must get the full serializer's 422, and
sharing must hold across threads."""

from __future__ import annotations

import ast
import importlib
import inspect
import itertools
import random
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any
from urllib.parse import quote

import pytest
from django.utils import timezone
from rest_framework import fields, serializers
from rest_framework.request import Request
from rest_framework.test import APIRequestFactory

from config.api.problems import RequestValidationError
from config.api.request import _shared_query_fields, _validate_with_shared_fields, parse_query

VIEW_MODULES = [
    "publishing.api.views",
    "readiness.api.views",
    "reposts.api.views",
    "themes.api.views",
    "voice.api.views",
    "workspaces.api.views",
]


def _resolve(node: ast.expr, namespace: Any) -> Any:
    if isinstance(node, ast.Name):
        return getattr(namespace, node.id)
    assert isinstance(node, ast.Attribute), ast.dump(node)
    return getattr(_resolve(node.value, namespace), node.attr)


def query_serializers() -> list[type[serializers.Serializer]]:  # type: ignore[type-arg]
    """Every serializer class the API's views pass to ``parse_query``."""
    found: dict[str, type[serializers.Serializer]] = {}  # type: ignore[type-arg]
    for name in VIEW_MODULES:
        module = importlib.import_module(name)
        for node in ast.walk(ast.parse(inspect.getsource(module))):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "parse_query":
                cls = _resolve(node.args[0], module)
                found[f"{cls.__module__}.{cls.__qualname__}"] = cls
    return [found[key] for key in sorted(found)]


QUERY_SERIALIZERS = query_serializers()


def full_serializer_outcome(
    serializer_class: type[serializers.Serializer],  # type: ignore[type-arg]
    request: Request,
) -> tuple[Any, ...]:
    """What ``parse_query`` answered before the fast path: always the full serializer."""
    serializer = serializer_class(data=request.query_params, context={"request": request})
    if not serializer.is_valid():
        return ("422", "query", serializer.errors)
    return ("ok", typed_items(dict(serializer.validated_data)))


def fast_outcome(
    serializer_class: type[serializers.Serializer],  # type: ignore[type-arg]
    request: Request,
) -> tuple[Any, ...]:
    try:
        result = parse_query(serializer_class, request)
    except RequestValidationError as exc:
        return ("422", exc.location, exc.detail)
    return ("ok", typed_items(result))


def typed_items(data: dict[str, Any]) -> list[tuple[str, type, Any]]:
    """Keys in order, with the type and value of each (``1 == True``, ``"1" != 1``)."""
    return [(key, type(value), value) for key, value in data.items()]


class Raw(str):
    """Query-string text sent as is (e.g. a percent-encoded lone surrogate)."""

    __slots__ = ()


def query_request(query: str | list[tuple[str, str]]) -> Request:
    if not isinstance(query, str):
        query = "&".join(
            f"{quote(name)}={value if isinstance(value, Raw) else quote(value, safe='')}"
            for name, value in query
        )
    return Request(APIRequestFactory().get("/api/v1/anything?" + query if query else "/x"))


def valid_value(field: fields.Field) -> str:  # type: ignore[type-arg]
    if isinstance(field, fields.ChoiceField):
        return str(next(iter(field.choices)))
    if isinstance(field, fields.IntegerField):
        return str(field.min_value if field.min_value is not None else 7)
    if isinstance(field, fields.DateTimeField):
        return "2024-02-29T23:59:59.123456+02:00"
    if isinstance(field, fields.RegexField):
        return str(field.default)
    return "value-1"


def candidate_values(field: fields.Field) -> list[str]:  # type: ignore[type-arg]
    """Valid, boundary and invalid inputs for one field, as query-string text."""
    common = ["", " ", "\x00", Raw("%ED%A0%80"), Raw("%FF"), Raw("a+b"), "null", "x" * 3000, "é"]
    if isinstance(field, fields.ChoiceField):
        return [*map(str, field.choices), "nope", " draft ", *common]
    if isinstance(field, fields.IntegerField):
        low, high = field.min_value, field.max_value
        edges = [v for v in (low, high) if v is not None]
        around = [str(v + d) for v in edges for d in (-1, 0, 1)]
        return [*around, "1.0", "1.5", "+3", " 4 ", "0x10", "1e2", "٣", "-0", "1" * 1001, *common]
    if isinstance(field, fields.DateTimeField):
        return [
            "2024-01-02T03:04:05Z",
            "2024-01-02T03:04:05",
            "2024-01-02 03:04:05+05:30",
            "2024-01-02",
            "2024-13-02T00:00:00Z",
            "yesterday",
            *common,
        ]
    if isinstance(field, fields.RegexField):
        return ["US", "us", "USA", "en", "en-GB", "pt-BR-x", "zzz", *common]
    assert type(field) is fields.CharField, field
    length = field.max_length or 10
    return ["abc", "  padded  ", "x" * length, "x" * (length + 1), "a\tb", *common]


def queries(
    serializer_class: type[serializers.Serializer],  # type: ignore[type-arg]
) -> Iterator[list[tuple[str, str]]]:
    """Each field absent or given each candidate value while the others are valid, plus
    repeated and unknown parameters and random combinations."""
    declared = serializer_class().fields
    baseline = [(name, valid_value(field)) for name, field in declared.items()]
    yield []
    yield baseline
    yield [*baseline, ("unknown", "1"), ("format", "json")]
    for name, field in declared.items():
        others = [pair for pair in baseline if pair[0] != name]
        yield others
        for value in candidate_values(field):
            yield [*others, (name, value)]
        yield [*others, (name, "bad"), (name, valid_value(field))]  # the last value wins
        yield [*others, (name, valid_value(field)), (name, "bad")]
    rng = random.Random(serializer_class.__name__)
    options = {name: [None, *candidate_values(field)] for name, field in declared.items()}
    for _ in range(60):
        picked = [(name, rng.choice(values)) for name, values in options.items()]
        yield [(name, value) for name, value in picked if value is not None]


def test_every_query_serializer_of_the_api_is_found() -> None:
    names = {cls.__name__ for cls in QUERY_SERIALIZERS}
    assert {"AuditQuerySerializer", "PageQuery", "PublicationListQuerySerializer"} <= names
    assert len(QUERY_SERIALIZERS) >= 12


@pytest.mark.parametrize("serializer_class", QUERY_SERIALIZERS, ids=lambda cls: cls.__name__)
def test_every_api_query_serializer_takes_the_shared_field_path(
    serializer_class: type[serializers.Serializer],  # type: ignore[type-arg]
) -> None:
    # A new query field type or hook falls back silently; this says so, so that the fast path
    # does not quietly stop applying to a list endpoint.
    assert _shared_query_fields(serializer_class) is not None


@pytest.mark.parametrize("serializer_class", QUERY_SERIALIZERS, ids=lambda cls: cls.__name__)
@pytest.mark.parametrize("tz", ["UTC", "America/Sao_Paulo"])
def test_outcome_is_the_full_serializers_for_every_query(
    serializer_class: type[serializers.Serializer],  # type: ignore[type-arg]
    tz: str,
) -> None:
    shared_fields = _shared_query_fields(serializer_class)
    assert shared_fields is not None
    answered = 0
    with timezone.override(tz):
        for query in queries(serializer_class):
            # Fresh requests for each: the full serializer must not see the fast path's work.
            expected = full_serializer_outcome(serializer_class, query_request(query))
            assert fast_outcome(serializer_class, query_request(query)) == expected, query
            # The shared fields answer every valid query themselves, and only those.
            shared = _validate_with_shared_fields(shared_fields, query_request(query).query_params)
            if expected[0] == "ok":
                assert shared is not None, query
                assert ("ok", typed_items(shared)) == expected, query
                answered += 1
            else:
                assert shared is None, query
    assert answered >= 3


def test_valid_queries_keep_types_defaults_and_order() -> None:
    from publishing.api.serializers import PublicationListQuerySerializer
    from workspaces.api.serializers import AuditQuerySerializer

    assert parse_query(AuditQuerySerializer, query_request("")) == {"limit": 50}
    assert parse_query(AuditQuerySerializer, query_request("limit=1.0")) == {"limit": 1}
    result = parse_query(
        PublicationListQuerySerializer,
        query_request("created_after=2024-01-02T03:04:05Z&limit=5&workspace_id=w&status=scheduled"),
    )
    assert list(result) == ["workspace_id", "limit", "status", "created_after"]
    assert result["created_after"].isoformat() == "2024-01-02T03:04:05+00:00"


def test_invalid_query_is_the_full_serializers_422() -> None:
    from workspaces.api.serializers import AuditQuerySerializer

    with pytest.raises(RequestValidationError) as caught:
        parse_query(AuditQuerySerializer, query_request("limit=0"))
    assert caught.value.location == "query"
    assert caught.value.detail == {"limit": ["Ensure this value is greater than or equal to 1."]}


class _ValidateMethod(serializers.Serializer):  # type: ignore[type-arg]
    limit = serializers.IntegerField(default=5)

    def validate_limit(self, value: int) -> int:
        return value * int(self.context["request"].query_params.get("factor", "1"))


class _ObjectValidate(serializers.Serializer):  # type: ignore[type-arg]
    limit = serializers.IntegerField(default=5)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        return {**attrs, "seen": self.context["request"].method}


class _ContextValidator:
    requires_context = True

    def __call__(self, value: Any, field: Any) -> None:
        if field.context["request"].query_params.get("deny"):
            raise serializers.ValidationError("denied")


class _CustomValidator(serializers.Serializer):  # type: ignore[type-arg]
    name = serializers.CharField(validators=[_ContextValidator()])


class _MutableDefault(serializers.Serializer):  # type: ignore[type-arg]
    tags = serializers.CharField(default=[])  # type: ignore[arg-type]


class _CallableDefault(serializers.Serializer):  # type: ignore[type-arg]
    tags = serializers.CharField(default=list)


class _Subclassed(serializers.Serializer):  # type: ignore[type-arg]
    class Field(serializers.CharField):
        def to_internal_value(self, data: Any) -> str:
            return str(self.context["request"].method)

    name = Field()


class _Renamed(serializers.Serializer):  # type: ignore[type-arg]
    name = serializers.CharField(source="other")


class _ReadOnly(serializers.Serializer):  # type: ignore[type-arg]
    name = serializers.CharField(read_only=True, default="x")
    limit = serializers.IntegerField(default=5)


class _MetaValidators(serializers.Serializer):  # type: ignore[type-arg]
    limit = serializers.IntegerField(default=5)

    class Meta:
        validators = [lambda attrs: None]


@pytest.mark.parametrize(
    ("serializer_class", "query", "expected"),
    [
        (_ValidateMethod, "limit=2&factor=3", {"limit": 6}),
        (_ObjectValidate, "limit=2", {"limit": 2, "seen": "GET"}),
        (_CustomValidator, "name=a", {"name": "a"}),
        (_MutableDefault, "", {"tags": []}),
        (_CallableDefault, "", {"tags": []}),
        (_Subclassed, "name=a", {"name": "GET"}),
        (_Renamed, "name=a", {"other": "a"}),
        (_ReadOnly, "", {"limit": 5}),
        (_MetaValidators, "", {"limit": 5}),
    ],
)
def test_serializers_that_need_their_own_instance_keep_it(
    serializer_class: type[serializers.Serializer],  # type: ignore[type-arg]
    query: str,
    expected: dict[str, Any],
) -> None:
    assert _shared_query_fields(serializer_class) is None
    assert parse_query(serializer_class, query_request(query)) == expected


def test_context_validator_still_sees_each_request() -> None:
    assert parse_query(_CustomValidator, query_request("name=a")) == {"name": "a"}
    with pytest.raises(RequestValidationError) as caught:
        parse_query(_CustomValidator, query_request("name=a&deny=1"))
    assert caught.value.detail == {"name": ["denied"]}


def test_serializer_kwargs_use_the_full_serializer() -> None:
    from workspaces.api.serializers import AuditQuerySerializer

    # partial=True skips defaults: only the full serializer knows that.
    assert parse_query(AuditQuerySerializer, query_request(""), partial=True) == {}


def test_shared_fields_give_each_thread_its_own_answer() -> None:
    from publishing.api.serializers import PublicationListQuerySerializer
    from workspaces.api.serializers import AuditQuerySerializer

    cases = [
        (cls, query)
        for cls in (AuditQuerySerializer, PublicationListQuerySerializer)
        for query in itertools.islice(queries(cls), 80)
    ]
    expected = [full_serializer_outcome(cls, query_request(query)) for cls, query in cases]
    assert any(outcome[0] == "ok" for outcome in expected)
    assert any(outcome[0] == "422" for outcome in expected)

    def run(seed: int) -> list[tuple[int, tuple[Any, ...]]]:
        order = list(range(len(cases)))
        random.Random(seed).shuffle(order)
        return [(i, fast_outcome(cases[i][0], query_request(cases[i][1]))) for i in order * 3]

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as possible
    try:
        with ThreadPoolExecutor(max_workers=8) as pool:
            results = list(pool.map(run, range(16)))
    finally:
        sys.setswitchinterval(interval)
    for answers in results:
        for i, outcome in answers:
            assert outcome == expected[i], cases[i]
