"""Clients generated from the served contract work (``{docs_url}/openapi.json`` is what
clients are generated from; docs/clients.md).

- The served document passes openapi-spec-validator, and states what generators need: closed
  sets as enum components (one per concept, parameters included), named objects where a
  generator would otherwise invent a clashing name, typed nested objects, header limits as
  schema, and nullable references that OpenAPI 3.0 validators accept ``null`` for.
- openapi-python-client generates a client from it with no warning and no dropped model, and the
  daily flow runs against a live ``make run`` through that client alone (SQLite, or PostgreSQL
  when the run has ``DATABASE_URL``).
- openapi-typescript's types of it compile with ``tsc --noEmit`` against docs/clients/flow.ts,
  which makes the same calls through openapi-fetch.
"""

from __future__ import annotations

import time
import uuid
from importlib import import_module
from pathlib import Path
from types import ModuleType
from typing import Any

import httpx
import pytest
import requests
from openapi_schema_validator import OAS30Validator
from openapi_spec_validator.validation.validators import OpenAPIV30SpecValidator

from publishing.api.idempotency import MAX_KEY_LENGTH
from publishing.models import Account, Publication
from tests.clients_support import (
    ROOT,
    generate_python_client,
    live_instance,
    pinned_npm_packages,
    typescript_check,
    typescript_toolchain,
)
from tests.openapi_support import served_contract

PUBLISH_SECONDS = 120  # a bound on waiting for the worker, not the expected time (a second or two)


@pytest.fixture(scope="session")
def contract(django_db_blocker: Any) -> dict[str, Any]:
    with django_db_blocker.unblock():
        return served_contract()


@pytest.fixture(scope="session")
def python_client(
    contract: dict[str, Any], tmp_path_factory: pytest.TempPathFactory
) -> tuple[ModuleType, str]:
    """The generated package and the generator's output, once per session."""
    return generate_python_client(contract, tmp_path_factory.mktemp("python-client"))


def schemas(contract: dict[str, Any]) -> dict[str, Any]:
    found: dict[str, Any] = contract["components"]["schemas"]
    return found


def oas30_validator(contract: dict[str, Any], schema: dict[str, Any]) -> OAS30Validator:
    """A strict OpenAPI 3.0 instance validator of ``schema``, whose ``$ref`` resolve in the
    contract's components."""
    return OAS30Validator({**schema, "components": contract["components"]})


def test_served_document_passes_openapi_spec_validator(contract: dict[str, Any]) -> None:
    errors = [
        f"{'/'.join(map(str, error.absolute_path))}: {error.message}"
        for error in OpenAPIV30SpecValidator(contract).iter_errors()
    ]
    assert errors == []


def test_nullable_references_accept_null_in_strict_validators(contract: dict[str, Any]) -> None:
    """Every nullable property that refers to a component takes ``null`` under a strict OpenAPI
    3.0 validator (``nullable`` applies only beside a ``type`` in the same schema object)."""
    found = []
    for name, component in schemas(contract).items():
        for field, schema in component.get("properties", {}).items():
            refs = [
                option["$ref"]
                for option in schema.get("oneOf", []) + schema.get("allOf", [])
                if "$ref" in option
            ]
            nullable = schema.get("nullable") or any(
                option.get("enum") == [None] for option in schema.get("oneOf", [])
            )
            if not refs or not nullable:
                continue
            found.append(f"{name}.{field}")
            errors = list(oas30_validator(contract, schema).iter_errors(None))
            assert errors == [], f"{name}.{field}: {[e.message for e in errors]}"
    assert "AccountConnectResult.account" in found
    assert "Destination.readiness" in found
    assert len(found) >= 10, found


def test_closed_sets_are_enum_components_and_nested_objects_are_typed(
    contract: dict[str, Any],
) -> None:
    components = schemas(contract)

    def values(ref: dict[str, Any]) -> list[Any]:
        return list(components[ref["$ref"].rsplit("/", 1)[1]]["enum"])

    account = components["Account"]["properties"]
    assert values(account["status"]) == list(Account.Status.values)
    publication = components["Publication"]["properties"]
    assert values(publication["execution_intent"]) == list(Publication.Intent.values)
    destination = components["Destination"]["properties"]
    actions = [value for option in destination["action"]["oneOf"] for value in values(option)]
    assert sorted(actions) == ["", "contact_support", "edit", "reconnect", "retry"]
    assert destination["options"] == {"$ref": "#/components/schemas/DestinationOptionSelection"}
    assert {"$ref": "#/components/schemas/ReadinessDecision"} in destination["readiness"]["oneOf"]

    listing = contract["paths"]["/api/v1/publications"]["get"]["parameters"]
    status = next(p for p in listing if p["name"] == "status")
    assert (
        status["schema"]
        == publication["status"]
        == {"$ref": "#/components/schemas/PublicationStatusEnum"}
    )
    create = contract["paths"]["/api/v1/publications"]["post"]["parameters"]
    key = next(p for p in create if p["name"] == "Idempotency-Key")
    assert key["schema"] == {"type": "string", "minLength": 1, "maxLength": MAX_KEY_LENGTH}


def test_request_defaults_are_described_not_declared(contract: dict[str, Any]) -> None:
    """A request field the server fills in when omitted is optional in generated types: its
    default is in the description (TypeScript generators make a field with a ``default``
    required), and no ``default`` anywhere contradicts its own schema."""
    body = schemas(contract)["PublicationPublishNowInputRequest"]
    intent = body["properties"]["execution_intent"]
    assert "default" not in intent
    assert 'Default when omitted: "normal".' in intent["description"]
    assert "execution_intent" not in body.get("required", [])
    for name, component in schemas(contract).items():
        for field, schema in component.get("properties", {}).items():
            if "default" in schema:
                assert not name.endswith("Request"), f"{name}.{field}"
                errors = list(oas30_validator(contract, schema).iter_errors(schema["default"]))
                assert errors == [], f"{name}.{field}"


def test_python_client_generates_without_warnings_or_dropped_models(
    contract: dict[str, Any], python_client: tuple[ModuleType, str]
) -> None:
    client, output = python_client
    assert "Warning" not in output, output
    assert "Unable to" not in output, output
    assert "will be omitted" not in output, output
    models = client.models  # type: ignore[attr-defined]
    # NullEnum ([null]) is the type None itself, not a class.
    missing = [
        name for name in schemas(contract) if name != "NullEnum" and not hasattr(models, name)
    ]
    assert missing == []


def expect(answered: int, model: type, module: Any, /, **kwargs: Any) -> Any:
    """``sync_detailed`` of a generated operation: answered ``answered``, parsed into ``model``
    (positional, so that an operation's own ``status`` parameter passes through)."""
    response = module.sync_detailed(**kwargs)
    assert response.status_code.value == answered, response.content[:2000]
    assert isinstance(response.parsed, model), response.content[:2000]
    return response.parsed


@pytest.mark.slow
@pytest.mark.django_db
def test_daily_flow_through_the_generated_python_client(
    contract: dict[str, Any], python_client: tuple[ModuleType, str], tmp_path: Path
) -> None:
    package, _ = python_client
    api = "herald_generated_client.api"
    workspaces_list = import_module(f"{api}.workspaces.workspaces_list")
    accounts_connect = import_module(f"{api}.accounts.accounts_connect")
    create = import_module(f"{api}.publications.publications_create")
    publish_now = import_module(f"{api}.publications.publications_publish_now")
    get = import_module(f"{api}.publications.publications_get")
    listing = import_module(f"{api}.publications.publications_list")
    m = package.models  # type: ignore[attr-defined]

    with live_instance(tmp_path) as (base, token):
        assert requests.get(f"{base}/docs/openapi.json", timeout=10).json() == contract
        # Idle connections are closed before the server's 5 s keep-alive ends, as docs/clients.md
        # advises: with httpx's default (also 5 s) a POST could meet a connection the server was
        # closing and be reset.
        herald = package.AuthenticatedClient(  # type: ignore[attr-defined]
            base_url=base,
            token=token,
            httpx_args={"limits": httpx.Limits(keepalive_expiry=2.0)},
        )

        workspaces = expect(200, m.WorkspacePage, workspaces_list, client=herald)
        workspace_id = workspaces.items[0].id

        fields = m.AccountConnectInputRequestFields.from_dict({"title": "My news"})
        body = m.AccountConnectInputRequest(
            workspace_id=workspace_id, provider="feed", fields=fields
        )
        connected = expect(201, m.AccountConnectResult, accounts_connect, client=herald, body=body)
        account = connected.account
        assert isinstance(account, m.Account)
        assert account.status == m.AccountStatusEnum.ACTIVE

        def draft(text: str) -> Any:
            destination = m.DestinationInputRequest(account_id=account.id)
            return m.PublicationCreateInputRequest(
                workspace_id=workspace_id, text=text, destinations=[destination]
            )

        key = str(uuid.uuid4())
        first = expect(
            201, m.Publication, create, client=herald, body=draft("First"), idempotency_key=key
        )
        replayed = expect(
            201, m.Publication, create, client=herald, body=draft("First"), idempotency_key=key
        )
        assert replayed.id == first.id, "the same key replays the first answer"

        no_body = m.PublicationPublishNowInputRequest()
        queued = expect(
            202, m.Publication, publish_now, client=herald, publication_id=first.id, body=no_body,
            idempotency_key=str(uuid.uuid4()),
        )  # fmt: skip
        assert queued.execution_intent == m.ExecutionIntentEnum.NORMAL
        deadline = time.monotonic() + PUBLISH_SECONDS
        current = queued
        while current.status != m.PublicationStatusEnum.PUBLISHED:
            assert current.status != m.PublicationStatusEnum.FAILED, current.to_dict()
            assert time.monotonic() < deadline, current.to_dict()
            time.sleep(0.5)
            current = expect(200, m.Publication, get, client=herald, publication_id=first.id)
        (destination,) = current.destinations
        assert destination.status == m.DestinationStatusEnum.PUBLISHED
        assert isinstance(destination.options, m.DestinationOptionSelection)
        assert destination.readiness is None
        assert destination.action == ""  # the BlankEnum alternative: nothing to do

        second = expect(201, m.Publication, create, client=herald, body=draft("Second"))
        seen, cursor = [], None
        while True:
            paging = {"cursor": cursor} if cursor else {}
            page = expect(
                200, m.PublicationPage, listing, client=herald, workspace_id=workspace_id,
                limit=1, **paging,
            )  # fmt: skip
            assert page.additional_properties == {}
            seen += [item.id for item in page.items]
            if not page.next_cursor:
                break
            cursor = page.next_cursor
        assert seen == [second.id, first.id]
        published = expect(
            200, m.PublicationPage, listing, client=herald, workspace_id=workspace_id,
            status=m.PublicationStatusEnum.PUBLISHED,
        )  # fmt: skip
        assert [item.id for item in published.items] == [first.id]

        invalid = m.PublicationCreateInputRequest(workspace_id=workspace_id, destinations=[])
        problem = expect(422, m.ErrorModel, create, client=herald, body=invalid)
        assert [error.location for error in problem.errors] == ["body.destinations"]

        problem = expect(404, m.ErrorModel, get, client=herald, publication_id=str(uuid.uuid4()))
        assert problem.status == 404


@pytest.mark.slow
def test_typescript_types_compile_against_the_documented_flow(
    contract: dict[str, Any], tmp_path: Path
) -> None:
    bin_dir = typescript_toolchain(ROOT / ".venv" / "npm-clients")
    typescript_check(bin_dir, contract, tmp_path / "ts")
    assert set(pinned_npm_packages()) == {"openapi-typescript", "typescript", "openapi-fetch"}
