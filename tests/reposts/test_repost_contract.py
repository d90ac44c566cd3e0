"""The served contract of the repost automation operations: schemas, problem responses, and
real responses validating against their own ``$schema`` documents."""

from __future__ import annotations

from typing import Any

import pytest
from rest_framework.test import APIClient

from config.api.problems import PROBLEM_CONTENT_TYPE
from tests.openapi_support import (
    ERROR_MODEL_REF,
    SchemaChecker,
    expected_problems,
    operations,
    served_contract,
)
from tests.publishing_support import make_account
from tests.repost_support import API, policy, put_policies, settings_url
from workspaces.access import Actor
from workspaces.services import workspace_create

OPERATIONS = {
    "repost_automation_get": ("/api/v1/repost-automation", "get", "200", "RepostSettings"),
    "repost_automation_replace": ("/api/v1/repost-automation", "put", "200", "RepostSettings"),
    "repost_account_grants_create": ("/api/v1/repost-account-grants", "post", "201", "RepostGrant"),
    "repost_account_grants_delete": (
        "/api/v1/repost-account-grants/{grant_id}",
        "delete",
        "204",
        None,
    ),
}


@pytest.fixture(scope="module")
def contract() -> dict[str, Any]:
    return served_contract()


def test_repost_operations_declare_schemas_and_problems(contract: dict[str, Any]) -> None:
    found = {op["operationId"]: (path, method, op) for path, method, op in operations(contract)}
    components = contract["components"]["schemas"]
    for operation_id, (path, method, success, component) in OPERATIONS.items():
        assert found[operation_id][:2] == (path, method), operation_id
        operation = found[operation_id][2]
        assert operation["security"] == [{"bearerAuth": []}, {"sessionAuth": []}], operation_id
        successes = {code for code in operation["responses"] if code.startswith("2")}
        assert successes == {success}, operation_id
        if component:
            schema = operation["responses"][success]["content"]["application/json"]["schema"]
            assert schema["$ref"].endswith(f"/{component}"), operation_id
        if "requestBody" in operation:
            ref = operation["requestBody"]["content"]["application/json"]["schema"]["$ref"]
            assert components[ref.rsplit("/", 1)[1]]["additionalProperties"] is False, operation_id
        errors = {code for code in operation["responses"] if code[0] in "45"}
        assert not expected_problems(path, operation) - errors, operation_id
        for code in errors:
            assert operation["responses"][code]["content"] == {
                PROBLEM_CONTENT_TYPE: {"schema": ERROR_MODEL_REF}
            }
    settings = components["RepostSettings"]
    assert set(settings["required"]) >= {
        "$schema",
        "workspace_id",
        "can_manage",
        "supported_platforms",
        "accounts",
        "grants",
        "policies",
    }
    assert components["RepostStageRule"]["required"] == ["delay_seconds", "unrepost_previous"]


@pytest.mark.django_db
def test_repost_responses_validate_against_their_schemas(
    owner_client: APIClient, user: Any, organization: Any, workspace: Any
) -> None:
    checker = SchemaChecker()
    partner = workspace_create(
        actor=Actor(user=user), organization_id=organization.pk, name="Partner"
    )
    partner_account = make_account(partner, "mastodon", "9")
    own = make_account(workspace, "mastodon", "1")
    created = owner_client.post(
        f"{API}/repost-account-grants",
        {
            "source_workspace_id": str(workspace.pk),
            "target_account_id": str(partner_account.pk),
        },
        format="json",
    )
    assert checker.validate(created.json()) == "RepostGrant"
    replaced = put_policies(
        owner_client,
        workspace,
        [
            policy(
                [own, partner_account],
                stages=[
                    {"delay_seconds": 3600, "unrepost_previous": False},
                    {"delay_seconds": 7200, "unrepost_previous": True},
                ],
            )
        ],
    )
    assert checker.validate(replaced.json()) == "RepostSettings"
    assert checker.validate(owner_client.get(settings_url(workspace)).json()) == "RepostSettings"
    problem = put_policies(owner_client, workspace, [], revision=0)
    assert checker.validate(problem.json()) == "ErrorModel"
