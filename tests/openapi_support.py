"""The served OpenAPI document and the ``$schema`` of responses, for the contract tests of every
app (tests/api/test_contract_openapi.py, tests/themes/test_themes_contract.py,
tests/reposts/test_repost_contract.py ...).

- ``served_contract()``: ``/docs/openapi.json`` as the instance serves it; ``operations(contract)``
  yields ``(path, method, operation)``; ``expected_problems(path, operation)``: the problem
  statuses an operation must declare; ``declared_component(...)``: the schema component a
  response declares.
- ``SchemaChecker().validate(body)``: fetches the body's ``$schema`` (an absolute URL of this
  instance, ``http://testserver`` in tests: set ``HERALD_PUBLIC_URL = ""``) through the Django
  test client, checks it is a valid Draft 2020-12 schema and validates the body (and every nested
  object with a ``$schema`` of its own) against it; returns the component name.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

from django.test import Client
from jsonschema import Draft202012Validator
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

from config.api.problems import PROBLEM_CONTENT_TYPE

ERROR_MODEL_REF = {"$ref": "#/components/schemas/ErrorModel"}
SCHEMA_URL = re.compile(r"^http://testserver/api/v1/schemas/(?P<name>[A-Za-z0-9]+)\.json$")


def served_contract() -> dict[str, Any]:
    response = Client().get("/docs/openapi.json")
    assert response.status_code == 200
    return response.json()  # type: ignore[no-any-return]


def operations(contract: dict[str, Any]) -> Iterator[tuple[str, str, dict[str, Any]]]:
    for path, item in contract["paths"].items():
        for method, operation in item.items():
            if method in {"get", "post", "put", "patch", "delete"}:
                yield path, method, operation


def expected_problems(path: str, operation: dict[str, Any]) -> set[str]:
    expected = {"406", "429", "500"}
    if operation.get("security"):
        expected |= {"401", "403"}
    if "{" in path:
        expected.add("404")
    if "requestBody" in operation or any(
        p["in"] == "query" for p in operation.get("parameters", [])
    ):
        expected.add("422")
    if "requestBody" in operation:
        expected |= {"400", "413", "415"}
    if operation["operationId"] == "health_readiness":
        expected.add("503")
    return expected


class SchemaChecker:
    """Fetches ``$schema`` documents through the Django test client and validates bodies."""

    def __init__(self) -> None:
        self.client = Client()
        self.fetched: set[str] = set()
        self.registry: Registry[Any] = Registry(retrieve=self._retrieve)  # type: ignore[call-arg]

    def _retrieve(self, uri: str) -> Resource[Any]:
        return Resource.from_contents(self.fetch(uri), default_specification=DRAFT202012)

    def fetch(self, uri: str) -> dict[str, Any]:
        match = SCHEMA_URL.match(uri)
        assert match, f"not an absolute schema URL of this instance: {uri}"
        response = self.client.get(urlsplit(uri).path)
        assert response.status_code == 200, uri
        assert response["Content-Type"] == "application/schema+json"
        document: dict[str, Any] = response.json()
        assert document["$schema"] == "https://json-schema.org/draft/2020-12/schema"
        assert document["$id"] == uri
        Draft202012Validator.check_schema(document)
        self.fetched.add(match["name"])
        return document

    def validate(self, body: Any) -> str:
        """Validate ``body`` against its own ``$schema`` (and every nested object against
        its own); returns the component name."""
        assert isinstance(body, dict), body
        uri = body["$schema"]
        schema = self.fetch(uri)
        validator = Draft202012Validator(
            schema, registry=self.registry, format_checker=Draft202012Validator.FORMAT_CHECKER
        )
        errors = sorted(validator.iter_errors(body), key=lambda e: list(e.path))
        assert not errors, [f"{list(e.path)}: {e.message}" for e in errors]
        for nested in _nested_objects(body):
            if "$schema" in nested:
                self.validate(nested)
        return str(SCHEMA_URL.match(uri)["name"])  # type: ignore[index]


def _nested_objects(node: Any) -> Iterator[dict[str, Any]]:
    children = node.values() if isinstance(node, dict) else node
    for child in children:
        if isinstance(child, dict):
            yield child
            yield from _nested_objects(child)
        elif isinstance(child, list):
            yield from _nested_objects(child)


def declared_component(contract: dict[str, Any], path: str, method: str, status: int) -> str:
    response = contract["paths"][path][method]["responses"][str(status)]
    content = response["content"]
    schema = (content.get("application/json") or content[PROBLEM_CONTENT_TYPE])["schema"]
    ref = schema.get("$ref") or schema["items"]["$ref"]
    return str(ref.rsplit("/", 1)[1])
