"""The readiness admin appends through the ledger services, the one way an admin page writes:
one call per saved page, a refusal shown at its field, and the admin going on with the row the
service appended."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from readiness import ledgers
from readiness.models import CertificationRun, RuntimeControl
from tests.admin_support import assert_addition_logged, record_calls
from tests.readiness_support import (  # noqa: F401  (scan_ledgers: autouse fixture)
    make_account,
    run_form_fields,
    scan_ledgers,
)

pytestmark = pytest.mark.django_db
CONTROL = {
    "provider": "discord_webhook",
    "output_profile": "",
    "operation": "",
    "mode": "disabled",
    "reason": "security",
}


@pytest.fixture
def admin_user(make_user: Any) -> Any:
    return make_user("root@example.com", is_superuser=True, is_staff=True)


@pytest.fixture
def client(admin_user: Any) -> Client:
    client = Client()
    client.force_login(admin_user)
    return client


def test_an_append_calls_the_ledger_service_once(
    client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = record_calls(monkeypatch, ledgers, "runtime_control_append")
    response = client.post(reverse("admin:readiness_runtimecontrol_add"), CONTROL)
    assert response.status_code == 302, response.content.decode()[:2000]
    assert [call["mode"] for call in calls] == ["disabled"]
    assert RuntimeControl.objects.count() == 1


def test_the_admin_goes_on_with_the_appended_row(client: Client, admin_user: Any) -> None:
    """The success message names, and the admin log records, the row the service appended."""
    response = client.post(reverse("admin:readiness_runtimecontrol_add"), CONTROL, follow=True)
    assert response.status_code == 200
    control = RuntimeControl.objects.get()
    [message] = [str(m) for m in response.context["messages"]]
    assert f"“{control}” was added" in message
    assert f"#{control.pk}" in str(control)
    assert_addition_logged(admin_user, control)


def test_a_refusal_shows_at_the_field_it_names_or_above_the_form(
    client: Client, workspace: Any
) -> None:
    fields = run_form_fields(make_account(workspace), output_profile="discord_webhook.poll")
    add = reverse("admin:readiness_certificationrun_add")
    response = client.post(add, fields)
    assert response.status_code == 200
    assert response.context["adminform"].form.errors == {
        "output_profile": ["One of discord_webhook.message."]
    }
    fields["output_profile"] = "discord_webhook.message"
    fields.pop("check_connect")  # body.checks names no field of the form
    response = client.post(add, fields)
    assert response.status_code == 200
    assert response.context["adminform"].form.errors == {
        "__all__": ["The connect check is missing."]
    }
    assert not CertificationRun.objects.exists()
