"""The four append-only ledgers and the evidence they hold: storage-layer triggers (SQLite and PostgreSQL), Django guards, normalized outcomes
and fingerprints only, supersession, subject binding and expiry through the real service."""

from __future__ import annotations

import dataclasses
from datetime import timedelta
from typing import Any

import pytest
from django.db import DatabaseError, connection, transaction
from django.utils import timezone

from config.errors import DomainError
from providers import get_adapter
from readiness import ledgers
from readiness import services as readiness
from readiness.models import (
    LEDGER_MODELS,
    ApprovalReview,
    CertificationCheck,
    CertificationRun,
    LedgerImmutableError,
    RuntimeControl,
)
from tests.readiness_support import (  # noqa: F401  (scan_ledgers: autouse fixture)
    approve_and_enable,
    certify,
    checks_for,
    enforce,
    make_account,
    scan_ledgers,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin_user(make_user: Any) -> Any:
    return make_user("root@example.com", is_superuser=True, is_staff=True)


@pytest.fixture
def rows(admin_user: Any, workspace: Any) -> dict[type, Any]:
    """One row of every ledger, appended through the services."""
    account = make_account(workspace)
    approve_and_enable(admin_user, "discord_webhook")
    (run,) = certify(admin_user, account, profile="discord_webhook.message", kinds=("live",))
    return {
        ApprovalReview: ApprovalReview.objects.get(),
        RuntimeControl: RuntimeControl.objects.get(),
        CertificationRun: run,
        CertificationCheck: run.checks.first(),
    }


# --- The storage layer ------------------------------------------------------------------------


@pytest.mark.parametrize("model", LEDGER_MODELS, ids=lambda m: m.__name__)
def test_raw_sql_update_and_delete_fail(model: Any, rows: dict[type, Any]) -> None:
    row = rows[model]
    table = connection.ops.quote_name(model._meta.db_table)
    before = model.objects.filter(pk=row.pk).values().get()
    # the table names are our own models' (no user input)
    updates = f"UPDATE {table} SET created_at = created_at WHERE id = %s"  # noqa: S608
    deletes = f"DELETE FROM {table} WHERE id = %s"  # noqa: S608
    for sql in (updates, deletes):
        with (
            pytest.raises(DatabaseError, match="append-only"),
            transaction.atomic(),
            connection.cursor() as cursor,
        ):
            cursor.execute(sql, [row.pk])
    with (
        pytest.raises(DatabaseError, match="append-only"),
        transaction.atomic(),
        connection.cursor() as cursor,
    ):
        cursor.execute(f"DELETE FROM {table}")  # noqa: S608
    assert model.objects.filter(pk=row.pk).values().get() == before


@pytest.mark.postgres
def test_postgresql_triggers_exist_on_every_ledger() -> None:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT event_object_table, event_manipulation FROM information_schema.triggers "
            "WHERE trigger_name LIKE 'readiness_%%_append_only'"
        )
        found = set(cursor.fetchall())
    for model in LEDGER_MODELS:
        assert {(model._meta.db_table, "UPDATE"), (model._meta.db_table, "DELETE")} <= found


@pytest.mark.parametrize("model", LEDGER_MODELS, ids=lambda m: m.__name__)
def test_django_refuses_updates_and_deletes(model: Any, rows: dict[type, Any]) -> None:
    row = rows[model]
    with pytest.raises(LedgerImmutableError):
        row.save()
    with pytest.raises(LedgerImmutableError):
        row.delete()
    with pytest.raises(LedgerImmutableError):
        model.objects.filter(pk=row.pk).update(created_at=timezone.now())
    with pytest.raises(LedgerImmutableError):
        model.objects.filter(pk=row.pk).delete()
    with pytest.raises(LedgerImmutableError):
        model.objects.bulk_update([row], ["created_at"])
    assert model.objects.filter(pk=row.pk).exists()


# --- What a row holds ---------------------------------------------------------------------------


def test_server_fills_fingerprints_digests_revision_and_scope_snapshots(
    rows: dict[type, Any], admin_user: Any, workspace: Any
) -> None:
    run = rows[CertificationRun]
    assert run.operator_fingerprint.startswith("operator:sha256:")
    assert run.account_fingerprint.startswith("account:sha256:")
    assert run.external_result_fingerprint.startswith("result:sha256:")
    assert run.app_fingerprint.startswith("app:sha256:")
    assert run.subject_digest.startswith("sha256:")
    assert run.contract_digest.startswith("sha256:")
    assert run.tested_revision
    assert run.tested_revision != ""
    assert run.outcome == "passed"
    assert (run.deployment_environment, run.provider_environment, run.policy_mode) == (
        "local",
        "production",
        "standard",
    )
    assert run.expires_at > run.tested_at
    assert sorted(run.checks.values_list("name", "outcome")) == sorted(
        (c["name"], c["outcome"]) for c in checks_for("discord_webhook", "publish_immediate")
    )
    review = rows[ApprovalReview]
    assert (
        review.operator_fingerprint == run.operator_fingerprint
    )  # stable per operator, never the identity
    assert review.reference_fingerprint.startswith("result:sha256:")
    mastodon = make_account(workspace, "mastodon")
    (live,) = certify(admin_user, mastodon, profile="mastodon.post", kinds=("live",))
    assert live.instance_fingerprint.startswith("instance:sha256:")
    assert live.required_scopes == sorted(get_adapter("mastodon").capabilities.required_scopes)
    assert live.granted_scopes == sorted(mastodon.granted_scopes)


def test_a_run_outcome_comes_from_its_checks(admin_user: Any, workspace: Any) -> None:
    account = make_account(workspace)
    (failed,) = certify(
        admin_user,
        account,
        profile="discord_webhook.message",
        kinds=("local",),
        failed=("reconciled_outcome",),
    )
    assert failed.outcome == "failed"
    # A grant without the contract's scopes is no proof, whatever the checks say.
    mastodon = make_account(workspace, "mastodon", granted_scopes=["read"])
    (live,) = certify(admin_user, mastodon, profile="mastodon.post", kinds=("live",))
    assert live.outcome == "failed"


def test_incomplete_or_unapproved_checks_are_refused(admin_user: Any, workspace: Any) -> None:
    account = make_account(workspace)
    checks = checks_for("discord_webhook", "publish_immediate")

    def append(given: list[dict[str, str]]) -> Any:
        return ledgers.certification_append(
            operator=admin_user,
            kind="local",
            provider="discord_webhook",
            operation="publish_immediate",
            output_profile="discord_webhook.message",
            account_id=account.pk,
            checks=given,
            external_result_reference="message 1",
        )

    with pytest.raises(DomainError) as missing:
        append(checks[:-1])
    assert missing.value.status == 422
    assert [e["location"] for e in missing.value.errors] == ["body.checks"]
    # refresh is implemented for webhooks: not applicable is not a permitted result for it
    refresh = [
        c
        if c["name"] != "refresh"
        else {"name": "refresh", "outcome": "not_applicable", "reason": "provider_has_no_refresh"}
        for c in checks
    ]
    with pytest.raises(DomainError) as not_allowed:
        append(refresh)
    assert any(e["location"].endswith(".reason") for e in not_allowed.value.errors)
    with pytest.raises(DomainError):
        append([*checks, {"name": "connect", "outcome": "passed"}])
    assert not CertificationRun.objects.exists()


def test_a_run_cannot_carry_free_text_identities(admin_user: Any, workspace: Any) -> None:
    """account_kind is a closed list; an instance belongs only to federated providers; a scope
    snapshot keeps plain scope names (a federated server reports its own granted scopes)."""
    account = make_account(workspace)

    def append(**extra: Any) -> Any:
        return ledgers.certification_append(
            operator=admin_user,
            kind="local",
            provider="bluesky",
            operation="connect",
            checks=checks_for("bluesky", "connect"),
            **extra,
        )

    for extra, location in (
        ({"account_kind": "ops@example.com"}, "body.account_kind"),
        ({"account_kind": "https://x.example"}, "body.account_kind"),
        ({"instance_url": "https://bsky.example"}, "body.instance_url"),
    ):
        with pytest.raises(DomainError) as refused:
            append(**extra)
        assert refused.value.status == 422
        assert [e["location"] for e in refused.value.errors] == [location]
    with pytest.raises(DomainError) as mismatch:
        ledgers.certification_append(
            operator=admin_user,
            kind="local",
            provider="discord_webhook",
            operation="connect",
            account_id=account.pk,
            account_kind="bot",
            checks=checks_for("discord_webhook", "connect"),
        )
    assert [e["location"] for e in mismatch.value.errors] == ["body.account_kind"]
    assert append(account_kind="bot").account_kind == "bot"
    scopes = [
        *get_adapter("mastodon").capabilities.required_scopes,
        "https://evil.example/scope",
        "someone@example.com",
        "follow",
    ]
    mastodon = make_account(workspace, "mastodon", granted_scopes=scopes)
    (live,) = certify(admin_user, mastodon, profile="mastodon.post", kinds=("live",))
    assert live.granted_scopes == sorted(
        ["follow", *get_adapter("mastodon").capabilities.required_scopes]
    )
    assert live.outcome == "passed"


def _run_errors(admin_user: Any, **given: Any) -> list[dict[str, Any]]:
    """The 422 errors of one certification append (the test fails if it is accepted)."""
    operation = given.setdefault("operation", "publish_immediate")
    given.setdefault("kind", "local")
    given.setdefault("provider", "discord_webhook")
    if "checks" not in given:
        given["checks"] = checks_for(given["provider"], operation)
    with pytest.raises(DomainError) as refused:
        ledgers.certification_append(operator=admin_user, **given)
    assert refused.value.status == 422
    return list(refused.value.errors)


PUBLISH = {"output_profile": "discord_webhook.message", "external_result_reference": "message 1"}


def test_each_certification_refusal_names_its_field(admin_user: Any, workspace: Any) -> None:
    """The first refused input, in the order the service checks them, is the one error."""
    account = make_account(workspace)
    mastodon = make_account(workspace, "mastodon")
    future = timezone.now() + timedelta(hours=1)
    cases: list[tuple[dict[str, Any], dict[str, Any]]] = [
        (
            {"provider": "myspace", "checks": []},
            {"location": "body.provider", "message": "One of ", "value": "myspace"},
        ),
        (
            {"external_result_reference": "message 1"},
            {"location": "body.output_profile", "message": "Required for a publish operation."},
        ),
        (
            {**PUBLISH, "output_profile": "discord_webhook.poll"},
            {
                "location": "body.output_profile",
                "message": "One of discord_webhook.message.",
                "value": "discord_webhook.poll",
            },
        ),
        (
            {"output_profile": "discord_webhook.message"},
            {
                "location": "body.external_result_reference",
                "message": "Required for a publish operation (stored only as a fingerprint).",
            },
        ),
        (
            {"operation": "connect", "output_profile": "discord_webhook.message"},
            {
                "location": "body.output_profile",
                "message": "Only publish operations have an output profile.",
            },
        ),
        (
            {**PUBLISH, "account_id": mastodon.pk, "instance_url": "https://x.example"},
            {
                "location": "body.account_id",
                "message": "No connected discord_webhook account with this ID.",
            },
        ),
        (
            {**PUBLISH, "kind": "live", "instance_url": "https://x.example"},
            {
                "location": "body.account_id",
                "message": "A live certification names the real account it used.",
            },
        ),
        (
            {"provider": "mastodon", "operation": "connect"},
            {
                "location": "body.instance_url",
                "message": "A federated provider's evidence names its instance.",
            },
        ),
        (
            {**PUBLISH, "instance_url": "https://x.example", "account_kind": "nobody"},
            {
                "location": "body.instance_url",
                "message": "discord_webhook has no federated instances.",
            },
        ),
        (
            {**PUBLISH, "account_id": account.pk, "account_kind": "nobody"},
            {
                "location": "body.account_kind",
                "message": "The account kind comes from the named account.",
                "value": "nobody",
            },
        ),
        (
            {**PUBLISH, "account_kind": "nobody", "checks": []},
            {
                "location": "body.account_kind",
                "message": f"One of {', '.join(ledgers.ACCOUNT_KINDS)}.",
                "value": "nobody",
            },
        ),
        (
            {**PUBLISH, "tested_at": future, "checks": []},
            {"location": "body.checks", "message": "The connect check is missing."},
        ),
        (
            {**PUBLISH, "tested_at": future},
            {
                "location": "body.tested_at",
                "message": "Must not be in the future.",
                "value": future.isoformat(),
            },
        ),
    ]
    for given, expected in cases:
        errors = _run_errors(admin_user, **given)
        first = errors[0]
        assert first["location"] == expected["location"], given
        assert first["message"].startswith(expected["message"]), (given, first)
        assert first.get("value") == expected.get("value"), given
        if expected["location"] != "body.checks":
            assert len(errors) == 1, given
    assert not CertificationRun.objects.exists()


def test_a_run_is_bound_to_its_named_instance_and_expires_after_its_retest_days(
    admin_user: Any, settings: Any
) -> None:
    def connect_run(provider: str, **extra: Any) -> Any:
        return ledgers.certification_append(
            operator=admin_user,
            kind="local",
            provider=provider,
            operation="connect",
            checks=checks_for(provider, "connect"),
            **extra,
        )

    tested = timezone.now() - timedelta(days=2)
    run = connect_run(
        "mastodon", instance_url="https://mastodon.example", tested_at=tested, retest_days=7
    )
    assert run.instance_fingerprint.startswith("instance:sha256:")
    assert run.account_kind == get_adapter("mastodon").capabilities.account_kind
    assert (run.account_fingerprint, run.external_result_fingerprint) == ("", "")
    assert run.granted_scopes == []
    assert (run.tested_at, run.expires_at) == (tested, tested + timedelta(days=7))
    later = connect_run("bluesky")
    assert later.expires_at - later.tested_at == timedelta(
        days=settings.HERALD_CERTIFICATION_RETEST_DAYS
    )


def test_only_an_instance_administrator_appends(make_user: Any) -> None:
    member = make_user("member@example.com")
    for append in (
        lambda: ledgers.approval_review_append(
            operator=member, provider="bluesky", outcome="approved"
        ),
        lambda: ledgers.runtime_control_append(
            operator=member, provider="bluesky", mode="enabled", reason="rollout"
        ),
    ):
        with pytest.raises(DomainError) as refused:
            append()
        assert refused.value.status == 403
    assert not RuntimeControl.objects.exists()
    assert not ApprovalReview.objects.exists()


# --- Evidence through the real service (enforced) -----------------------------------------------


def _decide(
    account: Any,
    profile: str = "discord_webhook.message",
    operation: str = "publish_immediate",
    intent: str = "normal",
) -> Any:
    from publishing.models import Account

    fresh = Account.objects.get(pk=account.pk)
    return readiness.decide_account(
        account=fresh, operation=operation, profile=profile, intent=intent
    )


def test_evidence_makes_an_enforced_subject_healthy_and_a_later_failed_run_supersedes(
    settings: Any, admin_user: Any, workspace: Any
) -> None:
    enforce(settings)
    account = make_account(workspace)
    unreleased = _decide(account)  # no runtime control: fail closed, but no explicit disable
    assert unreleased.state == "degraded"
    assert "control_missing" in {b.code for b in unreleased.blockers}
    approve_and_enable(admin_user, "discord_webhook")
    assert _decide(account).state == "certification_required"
    certify(admin_user, account, profile="discord_webhook.message")
    healthy = _decide(account)
    assert healthy.state == "healthy"
    assert healthy.blockers == ()
    # a later failed live run supersedes the older passing proof
    certify(
        admin_user,
        account,
        profile="discord_webhook.message",
        kinds=("live",),
        failed=("provider_result",),
    )
    superseded = _decide(account)
    assert superseded.state == "certification_required"
    assert [b.code for b in superseded.blockers] == ["live_certification_failed"]
    certify(admin_user, account, profile="discord_webhook.message", kinds=("live",))
    assert _decide(account).state == "healthy"


def test_expired_proof(settings: Any, admin_user: Any, workspace: Any) -> None:
    enforce(settings)
    account = make_account(workspace)
    approve_and_enable(admin_user, "discord_webhook")
    certify(admin_user, account, profile="discord_webhook.message", kinds=("local",))
    certify(
        admin_user,
        account,
        profile="discord_webhook.message",
        kinds=("live",),
        tested_at=timezone.now() - timedelta(days=3),
        retest_days=2,
    )
    decision = _decide(account)
    assert decision.state == "expired_proof"
    assert [b.code for b in decision.blockers] == ["live_certification_expired"]


@pytest.fixture
def certified(settings: Any, admin_user: Any, workspace: Any) -> Any:
    enforce(settings)
    account = make_account(workspace, "telegram")
    approve_and_enable(admin_user, "telegram")
    certify(admin_user, account, profile="telegram.message")
    assert _decide(account, "telegram.message").state == "healthy"
    return account


SUBJECT_CHANGES = {
    "app identity": lambda s, a, mp: setattr(
        s, "HERALD_TELEGRAM_API_URL", "https://bot-api.internal.example"
    ),
    "deployment environment": lambda s, a, mp: setattr(s, "HERALD_ENVIRONMENT", "staging"),
    "provider environment": lambda s, a, mp: setattr(s, "HERALD_PROVIDER_ENVIRONMENT", "sandbox"),
    "policy mode": lambda s, a, mp: setattr(s, "HERALD_PROVIDER_POLICY_MODE", "strict"),
    "account kind": lambda s, a, mp: type(a).objects.filter(pk=a.pk).update(account_kind="channel"),
    "capability": lambda s, a, mp: mp.setattr(
        get_adapter("telegram"),
        "capabilities",
        dataclasses.replace(
            get_adapter("telegram").capabilities,
            profiles=tuple(
                dataclasses.replace(p, text_limit=p.text_limit - 1)
                for p in get_adapter("telegram").capabilities.profiles
            ),
        ),
    ),
    "contract requirement": lambda s, a, mp: mp.setattr("readiness.subjects.CONTRACT_VERSION", 2),
}


@pytest.mark.parametrize("change", sorted(SUBJECT_CHANGES))
def test_changing_a_subject_key_makes_earlier_evidence_unusable(
    change: str, certified: Any, settings: Any, monkeypatch: Any
) -> None:
    from readiness import subjects

    subjects._contract.cache_clear()
    SUBJECT_CHANGES[change](settings, certified, monkeypatch)
    decision = _decide(certified, "telegram.message")
    assert not decision.executable
    codes = {b.code for b in decision.blockers}
    if change in ("app identity", "provider environment"):  # a new app has no approval either
        assert "approval_missing" in codes
    assert {"local_test_missing", "live_certification_missing"} <= codes, codes
    subjects._contract.cache_clear()


def test_other_format_operation_or_instance_is_another_subject(
    certified: Any, admin_user: Any, workspace: Any
) -> None:
    assert _decide(certified, "telegram.photo").state == "certification_required"
    assert (
        _decide(certified, "telegram.message", operation="publish_scheduled").state
        == "certification_required"
    )
    approve_and_enable(admin_user, "mastodon")
    one = make_account(workspace, "mastodon", instance_url="https://one.example")
    other = make_account(workspace, "mastodon", instance_url="https://other.example")
    certify(admin_user, one, profile="mastodon.post")
    assert _decide(one, "mastodon.post").state == "healthy"
    assert _decide(other, "mastodon.post").state == "certification_required"


def test_certification_test_needs_approval_and_an_enabled_control(
    settings: Any, admin_user: Any, workspace: Any
) -> None:
    enforce(settings)
    account = make_account(workspace)
    no_control = _decide(account, intent="certification_test")
    assert no_control.state == "degraded"  # no control enables it
    assert "control_missing" in {b.code for b in no_control.blockers}
    ledgers.runtime_control_append(
        operator=admin_user, provider="discord_webhook", mode="enabled", reason="rollout"
    )
    assert _decide(account, intent="certification_test").state == "approval_required"
    ledgers.approval_review_append(operator=admin_user, provider="discord_webhook", outcome="trial")
    decision = _decide(account, intent="certification_test")
    assert decision.state == "healthy"  # evidence gaps pass; trial permission suffices
    assert not decision.advertisable
    assert _decide(account).state == "trial_only"
    ledgers.runtime_control_append(
        operator=admin_user, provider="discord_webhook", mode="disabled", reason="security"
    )
    assert _decide(account, intent="certification_test").state == "disabled"


def test_a_runtime_control_applies_to_the_next_decision(
    settings: Any, admin_user: Any, workspace: Any
) -> None:
    """No caching: a disable appended now blocks the very next decision, even unenforced."""
    account = make_account(workspace)
    assert _decide(account).state == "healthy"
    ledgers.runtime_control_append(
        operator=admin_user,
        provider="discord_webhook",
        mode="disabled",
        reason="provider_incident",
        output_profile="discord_webhook.message",
    )
    assert _decide(account).state == "disabled"
    ledgers.runtime_control_append(
        operator=admin_user,
        provider="discord_webhook",
        mode="enabled",
        reason="restored",
        output_profile="discord_webhook.message",
    )
    assert _decide(account).state == "healthy"


def test_single_decision_is_a_few_queries(
    workspace: Any, django_assert_max_num_queries: Any
) -> None:
    account = make_account(workspace)
    from publishing.models import Account

    fresh = Account.objects.get(pk=account.pk)
    # runs, approvals, controls: one statement of three indexed look-ups; inside a caller's
    # transaction (as in this test) a savepoint pair keeps a failing ledger read from poisoning it.
    with django_assert_max_num_queries(3) as captured:
        readiness.decide_account(
            account=fresh, operation="publish_immediate", profile="discord_webhook.message"
        )
    statements = [q["sql"] for q in captured.captured_queries if "SAVEPOINT" not in q["sql"]]
    assert len(statements) == 1
    assert statements[0].count("MAX(") == 3


def test_unreadable_ledgers_fail_closed(workspace: Any, monkeypatch: Any) -> None:
    account = make_account(workspace)

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise DatabaseError("ledger offline")

    monkeypatch.setattr("readiness.evidence._fetch", broken)
    decision = _decide(account)
    assert decision.state == "degraded"
    assert [b.code for b in decision.blockers] == ["readiness_unavailable"]


def test_a_federated_connect_is_decided_for_its_instance(
    settings: Any, admin_user: Any, workspace: Any
) -> None:
    enforce(settings)
    approve_and_enable(admin_user, "mastodon")
    one = make_account(workspace, "mastodon", instance_url="https://one.example")
    certify(admin_user, one, profile="", operation="connect")
    decided = readiness.decide_provider(provider="mastodon", instance_url="https://ONE.example/")
    assert decided.state == "healthy"
    assert decided.connectable
    assert readiness.decide_provider(
        provider="mastodon", instance_url="https://two.example"
    ).state == ("certification_required")
