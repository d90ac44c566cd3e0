"""The readiness decision.

Table-driven: every state and every blocker code is reached from one healthy baseline by
changing one fact; consecutive states are paired to show the precedence; the enforcement flag by
deployment matrix shows what always blocks; evidence is bound to its exact subject.
"""

from __future__ import annotations

import dataclasses
from datetime import datetime, timedelta
from typing import Any

import pytest
from django.utils import timezone

from providers import get_adapter
from readiness.decisions import (
    BLOCKERS,
    CERTIFICATION_TEST,
    FACTS,
    HEALTHY,
    STATES,
    AccountFacts,
    DecisionInputs,
    Policy,
    evaluate,
)
from readiness.evidence import ApprovalFact, ControlFact, Evidence, RunFact
from readiness.subjects import AppIdentity, app_identity, contract_digest, make_subject

NOW = timezone.now()
LATER = NOW + timedelta(days=10)
EARLIER = NOW - timedelta(days=1)
OPS = ("connect", "publish_immediate", "publish_scheduled", "refresh", "revoke")


@dataclasses.dataclass
class Case:
    """One scenario: the facts of ``evaluate`` as plain values (healthy by default)."""

    provider: str = "discord_webhook"
    output_profile: str = "discord_webhook.message"
    operation: str = "publish_immediate"
    deployment_environment: str = "production"
    provider_environment: str = "production"
    app_source: str = ""  # "" = the provider's real app identity
    account: AccountFacts | None = dataclasses.field(
        default_factory=lambda: AccountFacts(
            status="active",
            has_credentials=True,
            credentials_readable=True,
            has_app=True,
            granted_scopes=(),
        )
    )
    local: str | None = "passed"  # passed | failed | expired | failed_expired | None (no run)
    live: str | None = "passed"
    live_scopes: tuple[str, ...] = ()
    approval: str | None = "approved"  # approved | trial | rejected | not_required | expired | None
    approval_operations: tuple[str, ...] = OPS
    approval_expires_at: datetime | None = None  # of any outcome; "expired" sets EARLIER
    controls: tuple[tuple[str, str, str], ...] = (("", "", "enabled"),)
    unavailable: bool = False
    disabled: frozenset[str] = frozenset()
    restrictions: frozenset[str] = frozenset()
    enforced: bool = True
    deployment: str = "cloud"
    intent: str = "normal"
    claims: frozenset[tuple[str, str, str, str]] = frozenset()
    policy_mode: str = "standard"

    def decide(self) -> Any:
        from providers import PROVIDERS

        caps = get_adapter(self.provider).capabilities if self.provider in PROVIDERS else None
        app = app_identity(self.provider, caps)
        if self.app_source:
            app = AppIdentity(self.app_source, app.fingerprint)
        subject = make_subject(
            provider=self.provider,
            app=app,
            operation=self.operation,
            output_profile=self.output_profile,
            account_kind=caps.account_kind if caps else "",
            federated=bool(caps and caps.federated),
            instance_url="https://mastodon.example" if caps and caps.federated else "",
            deployment_environment=self.deployment_environment,
            provider_environment=self.provider_environment,
            policy_mode=self.policy_mode,
        )
        contract = contract_digest(caps, subject)
        evidence = Evidence(unavailable=self.unavailable)
        for kind, outcome in (("local", self.local), ("live", self.live)):
            if outcome is not None:
                evidence.runs[(subject.digest, kind, contract)] = RunFact(
                    outcome="failed" if outcome.startswith("failed") else "passed",
                    tested_at=EARLIER,
                    expires_at=EARLIER if outcome.endswith("expired") else LATER,
                    required_scopes=self.live_scopes if kind == "live" else (),
                    granted_scopes=(),
                )
        if self.approval is not None:
            evidence.approvals[
                (subject.provider, subject.app_fingerprint, subject.provider_environment)
            ] = ApprovalFact(
                outcome="approved" if self.approval == "expired" else self.approval,
                operations=self.approval_operations,
                expires_at=EARLIER if self.approval == "expired" else self.approval_expires_at,
            )
        evidence.controls[subject.provider] = [ControlFact(p, o, m) for p, o, m in self.controls]
        policy = Policy(
            enforced=self.enforced,
            deployment=self.deployment,
            disabled_providers=self.disabled,
            restrictions=self.restrictions,
            claims=self.claims,
        )
        return evaluate(
            DecisionInputs(
                subject=subject,
                caps=caps,
                app=app,
                contract=contract,
                evidence=evidence,
                policy=policy,
                now=NOW,
                account=self.account,
                intent=self.intent,
            )
        )


def account(**changes: Any) -> AccountFacts:
    base = AccountFacts(
        status="active",
        has_credentials=True,
        credentials_readable=True,
        has_app=True,
        granted_scopes=(),
    )
    return dataclasses.replace(base, **changes)


MASTODON = {"provider": "mastodon", "output_profile": "mastodon.post"}
MASTODON_SCOPES = tuple(get_adapter("mastodon").capabilities.required_scopes)

# blocker code -> (the change that causes it, the expected state)
SCENARIOS: dict[str, tuple[dict[str, Any], str]] = {
    "unsupported_provider": (
        {"provider": "discord", "output_profile": "discord.message"},
        "unsupported",
    ),
    "unsupported_profile": ({"output_profile": "discord_webhook.poll"}, "unsupported"),
    "unsupported_operation": ({"operation": "revoke", "output_profile": ""}, "unsupported"),
    "provider_disabled": ({"disabled": frozenset({"discord_webhook"})}, "disabled"),
    "control_disabled": (
        {"controls": (("", "", "enabled"), ("discord_webhook.message", "", "disabled"))},
        "disabled",
    ),
    "control_missing": ({"controls": ()}, "degraded"),
    "app_missing": (
        {**MASTODON, "account": account(has_app=False, granted_scopes=MASTODON_SCOPES)},
        "needs_configuration",
    ),
    "credentials_unreadable": (
        {"account": account(credentials_readable=False)},
        "needs_configuration",
    ),
    "grant_invalid": ({"account": account(status="reconnect_required")}, "reconnect_required"),
    "credentials_missing": ({"account": account(has_credentials=False)}, "reconnect_required"),
    "scope_missing": (
        {**MASTODON, "account": account(granted_scopes=("read",))},
        "reconnect_required",
    ),
    "control_degraded": (
        {"controls": (("", "", "enabled"), ("", "publish_immediate", "degraded"))},
        "degraded",
    ),
    "readiness_unavailable": ({"unavailable": True}, "degraded"),
    "approval_missing": ({"approval": None}, "approval_required"),
    "approval_rejected": ({"approval": "rejected"}, "approval_required"),
    "approval_expired": ({"approval": "expired"}, "approval_required"),
    "approval_operation_not_permitted": (
        {"approval_operations": ("connect",)},
        "approval_required",
    ),
    "approval_trial": ({"approval": "trial"}, "trial_only"),
    "policy_restricted": (
        {"restrictions": frozenset({"discord_webhook.message"})},
        "policy_restricted",
    ),
    "non_production_identity": ({"provider_environment": "sandbox"}, "policy_restricted"),
    "local_test_expired": ({"local": "expired"}, "expired_proof"),
    "live_certification_expired": ({"live": "expired"}, "expired_proof"),
    "local_test_missing": ({"local": None}, "certification_required"),
    "local_test_failed": ({"local": "failed"}, "certification_required"),
    "live_certification_missing": ({"live": None}, "certification_required"),
    "live_certification_failed": ({"live": "failed"}, "certification_required"),
}


def test_the_table_covers_every_state_and_every_blocker_code() -> None:
    assert set(SCENARIOS) == set(BLOCKERS)
    assert {state for _, state in SCENARIOS.values()} == set(STATES)


def test_baseline_is_healthy_without_any_warning() -> None:
    decision = Case().decide()
    assert decision.state == HEALTHY
    assert decision.executable
    assert decision.publishable
    assert decision.connectable
    assert decision.blockers == ()
    assert decision.as_dict()["blockers"] == []
    assert {name: fact["status"] for name, fact in decision.as_dict()["facts"].items()} == {
        "configuration": "present",
        "local_test": "passed",
        "live_certification": "passed",
        "approval": "approved",
        "authorization": "valid",
        "policy": "allowed",
        "control": "enabled",
    }
    assert decision.contract_digest.startswith("sha256:")
    assert not decision.advertisable  # no public claim in the (empty) claims


@pytest.mark.parametrize("code", sorted(SCENARIOS))
def test_each_blocker_code_reaches_its_state(code: str) -> None:
    changes, state = SCENARIOS[code]
    decision = Case(**changes).decide()
    assert decision.state == state
    assert code in [b.code for b in decision.blockers]
    assert not decision.executable
    assert not decision.publishable
    assert not decision.advertisable
    assert all(b.detail for b in decision.blockers)


def test_one_changed_fact_gives_exactly_one_blocker() -> None:
    """Each scenario changes one fact (an unknown provider also has no contract or evidence)."""
    for code, (changes, _) in SCENARIOS.items():
        if code == "unsupported_provider":
            continue
        assert [b.code for b in Case(**changes).decide().blockers] == [code], code


# Each state paired with the next one in the precedence: the first always wins.
PAIRS = [
    ("unsupported_profile", "provider_disabled"),
    ("provider_disabled", "credentials_unreadable"),
    ("control_disabled", "credentials_unreadable"),
    ("app_missing", "grant_invalid"),
    ("grant_invalid", "control_degraded"),
    ("control_degraded", "approval_missing"),
    ("control_missing", "approval_missing"),
    ("approval_missing", "policy_restricted"),
    ("approval_trial", "policy_restricted"),
    ("policy_restricted", "local_test_expired"),
    ("local_test_expired", "live_certification_missing"),
]


@pytest.mark.parametrize(("first", "second"), PAIRS)
def test_precedence_pairs(first: str, second: str) -> None:
    changes = {**SCENARIOS[second][0], **SCENARIOS[first][0]}
    if "account" in SCENARIOS[first][0] and "account" in SCENARIOS[second][0]:
        changes["account"] = dataclasses.replace(
            SCENARIOS[first][0]["account"], status=SCENARIOS[second][0]["account"].status
        )
    decision = Case(**changes).decide()
    assert decision.state == SCENARIOS[first][1]
    assert {first, second} <= {b.code for b in decision.blockers}  # every blocker is listed


@pytest.mark.parametrize(
    "reported", ["app_missing", "credentials_unreadable", "grant_invalid", "credentials_missing"]
)
def test_a_missing_runtime_control_never_hides_configuration_or_grant_problems(
    reported: str,
) -> None:
    """Enforced, no control is a gated gap ranked as the control's ``degraded`` state: it is no
    explicit disable, and missing configuration or an invalid grant is still the state shown."""
    changes = {**SCENARIOS[reported][0], "controls": ()}
    decision = Case(**changes).decide()
    assert decision.state == SCENARIOS[reported][1]
    assert sorted(b.code for b in decision.blockers) == sorted([reported, "control_missing"])
    assert decision.state != "disabled"
    assert Case(controls=()).decide().facts["control"]["status"] == "missing"


def test_policy_mode_is_part_of_the_policy_fact() -> None:
    """The server permits the account, the format and the policy mode."""
    for restriction in ("mode:standard", "discord_webhook@standard"):
        decision = Case(
            restrictions=frozenset({restriction}), enforced=False, deployment="self_hosted"
        ).decide()
        assert decision.state == "policy_restricted", restriction
        assert decision.facts["policy"] == {"status": "restricted", "mode": "standard"}
    assert (
        Case(restrictions=frozenset({"mode:strict", "discord_webhook@strict", "bluesky@standard"}))
        .decide()
        .state
        == HEALTHY
    )
    strict = Case(policy_mode="strict", restrictions=frozenset({"mode:strict"})).decide()
    assert strict.state == "policy_restricted"
    assert strict.subject is not None
    assert strict.subject.policy_mode == "strict"


def test_disabled_with_missing_configuration_is_disabled() -> None:
    decision = Case(
        **MASTODON,
        disabled=frozenset({"mastodon"}),
        account=account(has_app=False, granted_scopes=MASTODON_SCOPES),
    ).decide()
    assert decision.state == "disabled"
    assert [b.code for b in decision.blockers] == ["provider_disabled", "app_missing"]


def test_explicit_disable_wins_over_everything_else() -> None:
    decision = Case(
        disabled=frozenset({"discord_webhook"}),
        account=account(status="reconnect_required"),
        approval=None,
        local=None,
        live="failed",
        restrictions=frozenset({"discord_webhook"}),
    ).decide()
    assert decision.state == "disabled"


def test_the_most_restrictive_control_wins() -> None:
    assert (
        Case(
            controls=(
                ("", "", "enabled"),
                ("discord_webhook.message", "publish_immediate", "disabled"),
            )
        )
        .decide()
        .state
        == "disabled"
    )
    assert (
        Case(controls=(("", "", "degraded"), ("discord_webhook.message", "", "enabled")))
        .decide()
        .state
        == "degraded"
    )
    # a control of another format or operation does not cover this subject
    assert (
        Case(controls=(("", "", "enabled"), ("", "publish_scheduled", "disabled"))).decide().state
        == HEALTHY
    )


# --- Enforcement flag by deployment --------------------------------------------------------------

ALWAYS_BLOCKING = {
    "explicit disable": ({"disabled": frozenset({"discord_webhook"})}, "disabled"),
    "ledger disable": ({"controls": (("", "", "disabled"),)}, "disabled"),
    "missing configuration": (
        {**MASTODON, "account": account(has_app=False, granted_scopes=MASTODON_SCOPES)},
        "needs_configuration",
    ),
    "revoked grant": ({"account": account(status="reconnect_required")}, "reconnect_required"),
    "policy restriction": ({"restrictions": frozenset({"discord_webhook"})}, "policy_restricted"),
}
GAPS = {
    "approval": {"approval": None},
    "runtime control": {"controls": ()},
    "local test": {"local": None},
    "live test": {"live": None},
    "scope evidence": {
        **MASTODON,
        "account": account(granted_scopes=()),
        "live_scopes": MASTODON_SCOPES,
    },
}
CELLS = [(deployment, flag) for deployment in ("cloud", "self_hosted") for flag in (True, False)]


@pytest.mark.parametrize(("deployment", "flag"), CELLS)
def test_flag_matrix_in_the_evaluator(deployment: str, flag: bool) -> None:
    enforced = deployment == "cloud" and flag
    everything_missing = Case(
        deployment=deployment, enforced=enforced, approval=None, controls=(), local=None, live=None
    ).decide()
    assert everything_missing.executable is (not enforced)
    for name, changes in GAPS.items():
        decision = Case(deployment=deployment, enforced=enforced, **changes).decide()
        assert decision.executable is (not enforced), name
        if not enforced:  # visible as a fact, never as a warning
            assert decision.blockers == ()
    for name, (changes, state) in ALWAYS_BLOCKING.items():
        # with complete evidence, and with no evidence at all: blocked either way
        decision = Case(deployment=deployment, enforced=enforced, **changes).decide()
        assert decision.state == state, (name, deployment, flag)
        bare = Case(
            deployment=deployment,
            enforced=enforced,
            approval=None,
            controls=changes.get("controls", ()),
            local=None,
            live=None,
            **{k: v for k, v in changes.items() if k != "controls"},
        ).decide()
        assert not bare.executable, (name, deployment, flag)
        assert {b.code for b in decision.blockers} <= {b.code for b in bare.blockers}


def test_production_identity_applies_on_cloud_regardless_of_the_flag() -> None:
    for flag in (True, False):
        assert (
            Case(provider_environment="sandbox", enforced=flag).decide().state
            == "policy_restricted"
        )
    assert (
        Case(provider_environment="sandbox", deployment="self_hosted", enforced=False)
        .decide()
        .state
        == HEALTHY
    )
    # a cloud staging deployment may use a sandbox app
    assert (
        Case(provider_environment="sandbox", deployment_environment="staging").decide().state
        == HEALTHY
    )


# --- certification_test -------------------------------------------------------------------------


def test_certification_test_bypasses_only_prior_local_and_live_evidence() -> None:
    for changes in ({"local": None, "live": None}, {"local": "failed", "live": "expired"}):
        decision = Case(intent=CERTIFICATION_TEST, **changes).decide()
        assert decision.state == HEALTHY, changes
        assert decision.facts["local_test"]["status"].startswith("bypassed_")
        assert not decision.advertisable  # never claimable
    # trial permission is enough for a certification test, not for normal work
    assert (
        Case(intent=CERTIFICATION_TEST, approval="trial", local=None, live=None).decide().state
        == HEALTHY
    )
    assert Case(approval="trial").decide().state == "trial_only"
    for code in (
        "approval_missing",
        "approval_rejected",
        "control_disabled",
        "control_missing",
        "provider_disabled",
        "grant_invalid",
        "scope_missing",
        "policy_restricted",
        "app_missing",
    ):
        changes, state = SCENARIOS[code]
        decision = Case(intent=CERTIFICATION_TEST, local=None, live=None, **changes).decide()
        assert decision.state == state, code


@pytest.mark.parametrize(("deployment", "flag"), CELLS)
def test_certification_test_is_strict_whatever_the_flag(deployment: str, flag: bool) -> None:
    """Only prior local and live evidence is bypassed: approval (or trial permission), every
    scope and an enabled runtime control are required in every cell of the matrix."""
    enforced = deployment == "cloud" and flag
    base = {
        "deployment": deployment,
        "enforced": enforced,
        "intent": CERTIFICATION_TEST,
        "local": None,
        "live": None,
    }
    assert Case(**base).decide().state == HEALTHY
    assert Case(**base, approval="trial").decide().state == HEALTHY
    for code in (
        "approval_missing",
        "approval_rejected",
        "approval_expired",
        "approval_operation_not_permitted",
        "control_missing",
        "scope_missing",
    ):
        changes, state = SCENARIOS[code]
        decision = Case(**{**base, **changes}).decide()
        assert decision.state == state, (code, deployment, flag)
        assert code in {b.code for b in decision.blockers}
    # the same gaps do not stop normal work unless enforcement applies
    normal = Case(deployment=deployment, enforced=enforced, approval=None, controls=()).decide()
    assert normal.executable is (not enforced)


def test_unknown_intent_or_operation_fails_loudly() -> None:
    with pytest.raises(ValueError, match="intent"):
        Case(intent="yolo").decide()
    with pytest.raises(ValueError, match="operation"):
        Case(operation="delete").decide()


def test_connect_decision_has_no_account_and_is_connectable() -> None:
    decision = Case(operation="connect", output_profile="", account=None).decide()
    assert decision.state == HEALTHY
    assert decision.connectable
    assert not decision.publishable
    assert decision.facts["authorization"]["status"] == "not_applicable"
    blocked = Case(
        operation="publish_immediate", account=account(status="reconnect_required")
    ).decide()
    assert blocked.connectable  # a reconnect is possible; the provider itself is fine
    assert not Case(disabled=frozenset({"discord_webhook"})).decide().connectable
    # a ledger control that stops connects makes a publish decision not connectable either
    assert not Case(controls=(("", "", "disabled"),)).decide().connectable
    assert (
        not Case(controls=(("", "", "enabled"), ("", "connect", "degraded"))).decide().connectable
    )
    assert (
        Case(controls=(("", "", "enabled"), ("discord_webhook.message", "", "disabled")))
        .decide()
        .connectable
    )
    assert not Case(controls=()).decide().connectable  # enforced: no control enables a connect
    assert Case(controls=(), enforced=False, deployment="self_hosted").decide().connectable


def _claimed(case: Case) -> frozenset[tuple[str, str, str, str]]:
    decision = case.decide()
    return frozenset(
        {(case.provider, case.output_profile, case.operation, decision.contract_digest)}
    )


@pytest.mark.parametrize("deployment", ["cloud", "self_hosted"])
def test_advertisable_needs_a_bound_claim_and_never_for_the_three_kinds(deployment: str) -> None:
    from readiness.subjects import NEVER_ADVERTISED

    assert {"pinterest", "telegram", "discord"} <= NEVER_ADVERTISED
    assert "discord_webhook" not in NEVER_ADVERTISED
    hook = Case(deployment=deployment)
    assert not hook.decide().advertisable  # healthy, but nothing claims it
    claimed = dataclasses.replace(hook, claims=_claimed(hook))
    assert claimed.decide().advertisable  # webhooks stay supported: a claim advertises them
    assert not dataclasses.replace(claimed, intent=CERTIFICATION_TEST).decide().advertisable
    assert (
        not dataclasses.replace(claimed, operation="publish_scheduled").decide().advertisable
    )  # other subject
    assert not dataclasses.replace(claimed, local="expired").decide().advertisable  # not healthy
    stale = {(p, f, o, "sha256:" + "0" * 64) for p, f, o, _ in claimed.claims}
    assert (
        not dataclasses.replace(hook, claims=frozenset(stale)).decide().advertisable
    )  # old contract
    telegram = Case(provider="telegram", output_profile="telegram.message", deployment=deployment)
    telegram = dataclasses.replace(telegram, claims=_claimed(telegram))
    decision = telegram.decide()
    assert decision.state == HEALTHY
    assert not decision.advertisable  # claimed, healthy, and still never advertised


@pytest.mark.parametrize("deployment", ["cloud", "self_hosted"])
@pytest.mark.parametrize("profile", ["pinterest.image", "pinterest.video"])
def test_pinterest_runs_where_allowed_and_is_never_advertised(
    deployment: str, profile: str, settings: Any
) -> None:
    """The image-pinboard kind: a configured app, a granted account and enabled controls make
    it executable (a self-hosted instance uses it), and no claim ever advertises it."""
    from providers.pinterest.adapter import SCOPES

    settings.PROVIDER_OAUTH_APPS = {
        **settings.PROVIDER_OAUTH_APPS,
        "pinterest": {"client_id": "pin-app", "client_secret": "pin-secret"},
    }
    granted = AccountFacts(
        status="active",
        has_credentials=True,
        credentials_readable=True,
        has_app=True,
        granted_scopes=SCOPES,
    )
    pins = Case(
        provider="pinterest", output_profile=profile, deployment=deployment, account=granted
    )
    pins = dataclasses.replace(pins, claims=_claimed(pins))
    decision = pins.decide()
    assert decision.state == HEALTHY, decision.blockers
    assert decision.executable
    assert not decision.advertisable  # claimed and healthy, and still never advertised


# --- Every fact as reported, and the order of the blockers ------------------------------------

RUN = {"tested_at": EARLIER.isoformat(), "expires_at": LATER.isoformat()}
NO_RUN = {"tested_at": None, "expires_at": None}
EXPIRED_RUN = {"tested_at": EARLIER.isoformat(), "expires_at": EARLIER.isoformat()}
UNREADABLE = account(credentials_readable=False)

# (the changes, the fact, what the decision reports for it)
FACT_CASES: list[tuple[dict[str, Any], str, dict[str, Any]]] = [
    ({}, "control", {"status": "enabled", "source": "ledger"}),
    ({"controls": ()}, "control", {"status": "missing", "source": "ledger"}),
    ({"controls": (("", "", "degraded"),)}, "control", {"status": "degraded", "source": "ledger"}),
    ({"controls": (("", "", "disabled"),)}, "control", {"status": "disabled", "source": "ledger"}),
    (
        {"disabled": frozenset({"discord_webhook"}), "controls": (("", "", "degraded"),)},
        "control",
        {"status": "disabled", "source": "environment"},
    ),
    (
        {"unavailable": True, "disabled": frozenset({"discord_webhook"})},
        "control",
        {"status": "unknown", "source": "ledger"},
    ),
    ({}, "configuration", {"status": "present", "source": "builtin"}),
    (
        {"provider": "discord", "output_profile": "discord.message"},
        "configuration",
        {"status": "missing", "source": "unknown"},
    ),
    (
        {**MASTODON, "account": account(has_app=False, granted_scopes=MASTODON_SCOPES)},
        "configuration",
        {"status": "missing", "source": "dynamic"},
    ),
    ({"account": UNREADABLE}, "configuration", {"status": "unreadable", "source": "builtin"}),
    (
        {**MASTODON, "account": account(has_app=False, credentials_readable=False)},
        "configuration",
        {"status": "unreadable", "source": "dynamic"},
    ),
    (  # only an active account's credentials are read
        {"account": account(status="reconnect_required", credentials_readable=False)},
        "configuration",
        {"status": "present", "source": "builtin"},
    ),
    ({}, "authorization", {"status": "valid"}),
    (
        {"account": None, "operation": "connect", "output_profile": ""},
        "authorization",
        {"status": "not_applicable"},
    ),
    ({"account": account(status="disconnected")}, "authorization", {"status": "invalid"}),
    ({"account": account(has_credentials=False)}, "authorization", {"status": "missing"}),
    (  # a scope the live run recorded as required counts like a contract scope
        {"live_scopes": ("x.write",)},
        "authorization",
        {"status": "scope_missing"},
    ),
    ({}, "approval", {"status": "approved", "expires_at": None}),
    ({"approval": None}, "approval", {"status": "missing"}),
    ({"approval": "expired"}, "approval", {"status": "expired", "expires_at": EARLIER.isoformat()}),
    (  # an expired rejection is reported as expired
        {"approval": "rejected", "approval_expires_at": EARLIER},
        "approval",
        {"status": "expired", "expires_at": EARLIER.isoformat()},
    ),
    ({"approval": "rejected"}, "approval", {"status": "rejected"}),
    (
        {"approval": "trial", "approval_expires_at": LATER},
        "approval",
        {"status": "trial", "expires_at": LATER.isoformat()},
    ),
    (  # "not required" permits every operation, whatever it lists
        {"approval": "not_required", "approval_operations": ("connect",)},
        "approval",
        {"status": "not_required", "expires_at": None},
    ),
    (
        {"approval": "trial", "approval_operations": ("connect",)},
        "approval",
        {"status": "not_permitted"},
    ),
    ({"approval": "pending"}, "approval", {"status": "not_permitted"}),
    ({}, "policy", {"status": "allowed", "mode": "standard"}),
    (
        {"restrictions": frozenset({"discord_webhook"})},
        "policy",
        {"status": "restricted", "mode": "standard"},
    ),
    ({"provider_environment": "sandbox"}, "policy", {"status": "restricted", "mode": "standard"}),
    ({"policy_mode": "strict"}, "policy", {"status": "allowed", "mode": "strict"}),
    ({}, "local_test", {"status": "passed", **RUN}),
    ({"local": None}, "local_test", {"status": "missing", **NO_RUN}),
    ({"local": "failed"}, "local_test", {"status": "failed", **RUN}),
    ({"local": "expired"}, "local_test", {"status": "expired", **EXPIRED_RUN}),
    ({}, "live_certification", {"status": "passed", **RUN}),
    ({"live": None}, "live_certification", {"status": "missing", **NO_RUN}),
    ({"live": "failed"}, "live_certification", {"status": "failed", **RUN}),
    ({"live": "expired"}, "live_certification", {"status": "expired", **EXPIRED_RUN}),
    (
        {"intent": CERTIFICATION_TEST, "local": None},
        "local_test",
        {"status": "bypassed_missing", **NO_RUN},
    ),
    (
        {"intent": CERTIFICATION_TEST, "live": "failed"},
        "live_certification",
        {"status": "bypassed_failed", **RUN},
    ),
    (
        {"intent": CERTIFICATION_TEST, "local": "expired"},
        "local_test",
        {"status": "bypassed_expired", **EXPIRED_RUN},
    ),
    ({"intent": CERTIFICATION_TEST}, "live_certification", {"status": "passed", **RUN}),
]


@pytest.mark.parametrize(("changes", "fact", "reported"), FACT_CASES)
def test_each_fact_reports_its_status(
    changes: dict[str, Any], fact: str, reported: dict[str, Any]
) -> None:
    decision = Case(**changes).decide()
    assert list(decision.facts) == list(FACTS)
    assert dict(decision.facts[fact]) == reported


def test_a_failed_run_is_failed_even_when_it_has_also_expired() -> None:
    for fact, changes in (
        ("local_test", {"local": "failed_expired"}),
        ("live_certification", {"live": "failed_expired"}),
    ):
        decision = Case(**changes).decide()
        assert decision.facts[fact] == {"status": "failed", **EXPIRED_RUN}
        assert [b.code for b in decision.blockers] == [f"{fact}_failed"]


@pytest.mark.parametrize(
    ("changes", "codes"),
    [
        (
            {
                **MASTODON,
                "account": account(
                    has_app=False, credentials_readable=False, granted_scopes=("read",)
                ),
                "disabled": frozenset({"mastodon"}),
                "approval": None,
                "restrictions": frozenset({"mastodon"}),
                "provider_environment": "sandbox",
                "local": None,
                "live": "failed",
            },
            [
                "provider_disabled",
                "app_missing",
                "credentials_unreadable",
                "scope_missing",
                "approval_missing",
                "policy_restricted",
                "non_production_identity",
                "local_test_missing",
                "live_certification_failed",
            ],
        ),
        (
            {
                "provider": "mastodon",
                "output_profile": "mastodon.poll",
                "account": account(has_app=False, granted_scopes=MASTODON_SCOPES),
                "controls": (("", "", "degraded"),),
                "approval": "rejected",
                "local": "expired",
                "live": "expired",
            },
            [
                "unsupported_profile",
                "control_degraded",
                "app_missing",
                "approval_rejected",
                "local_test_expired",
                "live_certification_expired",
            ],
        ),
        (
            {"provider": "discord", "output_profile": "discord.message", "controls": ()},
            ["unsupported_provider", "control_missing"],
        ),
    ],
)
def test_blockers_are_listed_capabilities_first_then_fact_by_fact(
    changes: dict[str, Any], codes: list[str]
) -> None:
    """Capabilities, then control, configuration, authorization, approval, policy, local and live
    evidence, each in the order its checks run."""
    assert [b.code for b in Case(**changes).decide().blockers] == codes


def test_not_enforced_only_always_blocking_codes_are_listed_in_the_same_order() -> None:
    decision = Case(
        **MASTODON,
        account=account(has_app=False, credentials_readable=False, granted_scopes=("read",)),
        controls=(),
        approval=None,
        restrictions=frozenset({"mastodon"}),
        local=None,
        enforced=False,
        deployment="self_hosted",
    ).decide()
    assert [b.code for b in decision.blockers] == [
        "app_missing",
        "credentials_unreadable",
        "policy_restricted",
    ]
    assert decision.state == "needs_configuration"
    assert decision.facts["authorization"] == {"status": "scope_missing"}  # a fact, not a blocker
