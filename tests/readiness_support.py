"""Shared helpers of the readiness tests: evidence appended through the real ledger services,
and a scan of every ledger row a test wrote (imported as an autouse fixture)."""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from providers import get_adapter
from readiness import ledgers
from readiness.models import LEDGER_MODELS
from readiness.subjects import not_applicable_allowed, required_checks

SECRET_TOKEN = "tok-SECRET-4f1c2e9a7b"  # the credential every test account carries
FORBIDDEN = re.compile(
    r"://|@|hrld_|SECRET|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|mastodon\.example|example\.com",
    re.IGNORECASE,
)


def make_account(workspace: Any, provider: str = "discord_webhook", **extra: Any) -> Any:
    from providers import credentials
    from publishing.models import Account, ProviderApp

    caps = get_adapter(provider).capabilities
    app = None
    instance_url = extra.pop("instance_url", "https://mastodon.example" if caps.federated else "")
    if provider == "mastodon":
        app, _ = ProviderApp.objects.get_or_create(
            provider="mastodon",
            instance_url=instance_url,
            redirect_uri="",
            defaults={
                "credentials_encrypted": credentials.encrypt(
                    {"client_id": "c", "client_secret": "s"}
                )
            },
        )
    values: dict[str, Any] = {
        "workspace": workspace,
        "provider": provider,
        "external_id": uuid.uuid4().hex[:12],
        "username": f"{provider}-user",
        "app": app,
        "instance_url": instance_url,
        "account_kind": caps.account_kind,
        "granted_scopes": list(caps.required_scopes),
        "credentials_encrypted": credentials.encrypt(
            {
                "access_token": SECRET_TOKEN,
                "webhook_url": f"https://discord.com/api/webhooks/1/{SECRET_TOKEN}",
            }
        ),
    }
    values.update(extra)
    return Account.objects.create(**values)


def checks_for(
    provider: str, operation: str, *, failed: tuple[str, ...] = ()
) -> list[dict[str, str]]:
    caps = get_adapter(provider).capabilities
    allowed = not_applicable_allowed(caps)
    out = []
    for name in required_checks(operation):
        if name in failed:
            out.append({"name": name, "outcome": "failed"})
        elif name in allowed:
            out.append({"name": name, "outcome": "not_applicable", "reason": allowed[name][0]})
        else:
            out.append({"name": name, "outcome": "passed"})
    return out


def certify(
    operator: Any,
    account: Any,
    *,
    profile: str,
    operation: str = "publish_immediate",
    kinds: tuple[str, ...] = ("local", "live"),
    failed: tuple[str, ...] = (),
    **extra: Any,
) -> list[Any]:
    runs = []
    for kind in kinds:
        runs.append(
            ledgers.certification_append(
                operator=operator,
                kind=kind,
                provider=account.provider,
                operation=operation,
                output_profile=profile if operation.startswith("publish") else "",
                account_id=account.pk,
                checks=checks_for(account.provider, operation, failed=failed),
                external_result_reference=f"https://provider.example/post/{SECRET_TOKEN}",
                **extra,
            )
        )
    return runs


def run_form_fields(account: Any, **changes: str) -> dict[str, str]:
    """The admin add form of a local publish_immediate run of ``account`` (a webhook)."""
    fields = {
        "kind": "local",
        "provider": "discord_webhook",
        "operation": "publish_immediate",
        "output_profile": "discord_webhook.message",
        "account_id": str(account.pk),
        "external_result_reference": "message 1234",
        **changes,
    }
    for check in checks_for("discord_webhook", "publish_immediate"):
        fields[f"check_{check['name']}"] = check["outcome"]
        fields[f"reason_{check['name']}"] = check.get("reason", "")
    return fields


def approve_and_enable(operator: Any, provider: str, *, outcome: str = "approved") -> None:
    ledgers.approval_review_append(
        operator=operator,
        provider=provider,
        outcome=outcome,
        review_reference=f"review for {operator.email}",
    )
    ledgers.runtime_control_append(
        operator=operator, provider=provider, mode="enabled", reason="rollout"
    )


def enforce(settings: Any) -> None:
    settings.HERALD_DEPLOYMENT = "cloud"
    settings.SERVICE_PROVIDER_CERTIFICATION_ENFORCED = True
    settings.HERALD_DISABLED_PROVIDERS = []


def ledger_values() -> Iterator[tuple[str, str, str]]:
    for model in LEDGER_MODELS:
        for row in model.objects.values():
            for column, value in row.items():
                yield model.__name__, column, str(value)


@pytest.fixture(autouse=True)
def scan_ledgers(db: None) -> Iterator[None]:
    """After each test (before its transaction is rolled back): no ledger row it wrote holds a
    token, URL, account ID or e-mail."""
    yield
    from publishing.models import Account
    from workspaces.models import User

    known_ids = {str(pk) for pk in Account.objects.values_list("pk", flat=True)}
    known_ids |= {str(pk) for pk in User.objects.values_list("pk", flat=True)}
    for model, column, value in ledger_values():
        assert not FORBIDDEN.search(value), f"{model}.{column} holds {value!r}"
        assert not any(known in value for known in known_ids), f"{model}.{column} holds an ID"
