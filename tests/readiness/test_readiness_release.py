"""Public claims and the ``provider-certification`` release gate."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from providers import get_adapter
from readiness import services as readiness
from readiness.claims import (
    CLAIMS_FILE,
    MANIFEST_FILE,
    advertised_claims,
    file_digest,
    manifest_for,
)
from readiness.subjects import app_identity, contract_digest, make_subject
from tests.readiness_support import (  # noqa: F401  (scan_ledgers: autouse fixture)
    approve_and_enable,
    certify,
    make_account,
    scan_ledgers,
)

pytestmark = pytest.mark.django_db


def release_check(claims: Path = CLAIMS_FILE, manifest: Path = MANIFEST_FILE) -> str:
    from io import StringIO

    out = StringIO()
    call_command(
        "release_check",
        "provider-certification",
        "--claims",
        str(claims),
        "--manifest",
        str(manifest),
        stdout=out,
    )
    return out.getvalue()


def write_claims(
    folder: Path, claims: list[dict[str, str]], *, bind: bool = True
) -> tuple[Path, Path]:
    claims_path = folder / "public-claims.json"
    claims_path.write_text(json.dumps({"schema_version": 1, "claims": claims}) + "\n")
    manifest_path = folder / "release-manifest.json"
    if bind:
        manifest_path.write_text(json.dumps(manifest_for(claims_path)))
    else:
        manifest_path.write_text(MANIFEST_FILE.read_text())
    return claims_path, manifest_path


def production_claim(
    provider: str, profile: str, operation: str = "publish_immediate"
) -> dict[str, str]:
    caps = get_adapter(provider).capabilities
    subject = make_subject(
        provider=provider,
        app=app_identity(provider, caps),
        operation=operation,
        output_profile=profile,
        account_kind=caps.account_kind,
        federated=caps.federated,
        deployment_environment="production",
        provider_environment="production",
    )
    return {
        "provider": provider,
        "output_profile": profile,
        "operation": operation,
        "contract_digest": contract_digest(caps, subject),
    }


def test_shipped_files_claim_nothing_and_are_bound() -> None:
    assert json.loads(CLAIMS_FILE.read_text()) == {"schema_version": 1, "claims": []}
    manifest = json.loads(MANIFEST_FILE.read_text())
    assert manifest["sha256"] == file_digest(CLAIMS_FILE)
    assert (manifest["schema_version"], manifest["claim_count"]) == (1, 0)
    assert "passed: manifest binds 0 claim(s)" in release_check()
    assert advertised_claims() == frozenset()


def test_a_claim_without_a_trusted_ledger_projection_is_rejected(tmp_path: Path) -> None:
    claims, manifest = write_claims(tmp_path, [production_claim("bluesky", "bluesky.post")])
    with pytest.raises(CommandError, match="no trusted ledger projection"):
        release_check(claims, manifest)


def test_a_digest_mismatch_is_rejected(tmp_path: Path) -> None:
    claims, manifest = write_claims(tmp_path, [], bind=False)
    claims.write_text('{"schema_version": 1, "claims": [ ]}\n')  # same meaning, other bytes
    with pytest.raises(CommandError, match="sha256"):
        release_check(claims, manifest)
    bound = json.loads(manifest.read_text())
    bound.update(sha256=file_digest(claims), claim_count=3)
    manifest.write_text(json.dumps(bound))
    with pytest.raises(CommandError, match="claim_count"):
        release_check(claims, manifest)
    claims.write_text('{"schema_version": 2, "claims": []}')
    with pytest.raises(CommandError, match="schema_version"):
        release_check(claims, manifest)


@pytest.fixture
def production_evidence(settings: Any, make_user: Any, workspace: Any) -> Any:
    """The hosted production deployment, whose ledger passes the gate for bluesky.post (immediate)."""
    from cryptography.fernet import Fernet

    settings.HERALD_DEPLOYMENT = "cloud"
    settings.HERALD_ENVIRONMENT = "production"
    settings.HERALD_PROVIDER_ENVIRONMENT = "production"
    settings.HERALD_CREDENTIALS_KEY = Fernet.generate_key().decode()  # required outside local
    operator = make_user("root@example.com", is_superuser=True)
    account = make_account(workspace, "bluesky")
    approve_and_enable(operator, "bluesky")
    certify(operator, account, profile="bluesky.post")
    return account


def test_the_trusted_ledger_projection_supplies_current_digests(
    tmp_path: Path, production_evidence: Any
) -> None:
    claims, manifest = write_claims(tmp_path, [production_claim("bluesky", "bluesky.post")])
    assert "passed: manifest binds 1 claim(s)" in release_check(claims, manifest)
    stale = {**production_claim("bluesky", "bluesky.post"), "contract_digest": "sha256:" + "0" * 64}
    other = production_claim("bluesky", "bluesky.post", "publish_scheduled")  # never certified
    never = production_claim("telegram", "telegram.message")
    claims, manifest = write_claims(tmp_path, [stale, other, never])
    with pytest.raises(CommandError) as rejected:
        release_check(claims, manifest)
    message = str(rejected.value)
    assert "is not the current" in message
    assert "bluesky bluesky.post publish_scheduled: local_test is missing" in message
    assert "telegram has no public hosted claim" in message


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("HERALD_DEPLOYMENT", "self_hosted"),
        ("HERALD_ENVIRONMENT", "staging"),
        ("HERALD_PROVIDER_ENVIRONMENT", "sandbox"),
    ],
)
def test_only_the_hosted_production_ledger_is_a_trusted_projection(
    tmp_path: Path, production_evidence: Any, settings: Any, name: str, value: str
) -> None:
    """A developer's, staging or self-hosted database is no trusted projection, whatever its
    ledgers hold: a build or a local run cannot add a claim."""
    claims, manifest = write_claims(tmp_path, [production_claim("bluesky", "bluesky.post")])
    assert "passed" in release_check(claims, manifest)
    setattr(settings, name, value)
    with pytest.raises(CommandError, match=f"no trusted ledger projection.*{name}={value}"):
        release_check(claims, manifest)


def test_a_bound_claim_makes_only_its_healthy_subject_advertisable(
    tmp_path: Path, production_evidence: Any, monkeypatch: Any
) -> None:
    claims, _ = write_claims(
        tmp_path,
        [
            production_claim("bluesky", "bluesky.post"),
            production_claim("telegram", "telegram.message"),
        ],
    )
    monkeypatch.setattr("readiness.services.advertised_claims", lambda: advertised_claims(claims))
    from publishing.models import Account

    account = Account.objects.get(pk=production_evidence.pk)
    assert readiness.decide_account(
        account=account, operation="publish_immediate", profile="bluesky.post"
    ).advertisable
    assert not readiness.decide_account(
        account=account, operation="publish_scheduled", profile="bluesky.post"
    ).advertisable
    assert not readiness.decide_account(
        account=account,
        operation="publish_immediate",
        profile="bluesky.post",
        intent="certification_test",
    ).advertisable
    bot = make_account(production_evidence.workspace, "telegram")
    assert not readiness.decide_account(
        account=bot, operation="publish_immediate", profile="telegram.message"
    ).advertisable
    Account.objects.filter(pk=account.pk).update(status="reconnect_required")
    account.refresh_from_db()
    assert not readiness.decide_account(
        account=account, operation="publish_immediate", profile="bluesky.post"
    ).advertisable
    # an unbound claims file claims nothing
    (tmp_path / "release-manifest.json").write_text(MANIFEST_FILE.read_text())
    assert advertised_claims(claims) == frozenset()


def test_rule_3_a_live_scope_snapshot_must_cover_the_required_scopes(
    tmp_path: Path, production_evidence: Any
) -> None:
    """A passed live run whose granted scope snapshot lacks a required scope (a row an older
    release wrote, or one appended outside the service) is no proof for a public claim."""
    from django.contrib.auth import get_user_model

    from providers import credentials
    from publishing.models import ProviderApp
    from readiness.models import CertificationCheck, CertificationRun

    ProviderApp.objects.create(
        provider="x",
        instance_url="",
        redirect_uri="",
        credentials_encrypted=credentials.encrypt({"client_id": "c", "client_secret": "s"}),
    )
    account = make_account(production_evidence.workspace, "x")

    root = get_user_model().objects.get(email="root@example.com")
    approve_and_enable(root, "x")
    certify(root, account, profile="x.post")
    claims, manifest = write_claims(tmp_path, [production_claim("x", "x.post")])
    assert "passed: manifest binds 1 claim(s)" in release_check(claims, manifest)

    live = CertificationRun.objects.filter(provider="x", kind="live").latest("id")
    checks = list(CertificationCheck.objects.filter(run=live))
    narrowed = CertificationRun.objects.create(
        **{
            field.name: getattr(live, field.name)
            for field in CertificationRun._meta.concrete_fields
            if field.name != "id"
        }
        | {"granted_scopes": [s for s in live.granted_scopes if s != "tweet.write"]}
    )
    CertificationCheck.objects.bulk_create(
        CertificationCheck(run=narrowed, name=c.name, outcome=c.outcome, reason=c.reason)
        for c in checks
    )
    with pytest.raises(CommandError, match="granted scopes do not cover the required scopes"):
        release_check(claims, manifest)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("provider", "bluesky@example"),
        ("output_profile", "https://bsky.example/post"),
        ("output_profile", "bluesky.post hrld_abc"),
        ("operation", "Bearer abc"),
        ("operation", "publish_token_immediate"),
        ("output_profile", "secret.post"),
        ("provider", "0f8e2a4b-1c3d-4e5f-9a8b-7c6d5e4f3a2b"),
    ],
)
def test_rule_7_a_claim_carrying_account_url_or_credential_data_is_rejected(
    tmp_path: Path, production_evidence: Any, field: str, value: str
) -> None:
    """Checked before anything else, so such data never reaches a digest, a log or a reason
    beyond its label, even on the trusted projection where a clean claim passes."""
    clean = production_claim("bluesky", "bluesky.post")
    claims, manifest = write_claims(tmp_path, [clean])
    assert "passed" in release_check(claims, manifest)
    claims, manifest = write_claims(tmp_path, [{**clean, field: value}])
    with pytest.raises(
        CommandError, match="must not carry account, operator, credential, URL or raw result data"
    ):
        release_check(claims, manifest)
