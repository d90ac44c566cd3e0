#!/usr/bin/env python
"""Readiness benchmark: the projection of a workspace with 300 connected accounts, and the
per-delivery readiness check.

    .venv/bin/python bench/readiness.py                       # or: make bench-readiness
    .venv/bin/python bench/readiness.py --accounts 1000 --rounds 10

On the production path (PostgreSQL), in one process:

1. creates the PostgreSQL database ``herald_bench_readiness`` (dropped and re-created; only
   names starting with ``herald_bench`` are managed) and migrates it;
2. seeds a user, an organization, a workspace with ``--accounts`` connected accounts spread over
   every provider (Mastodon accounts on 7 instances), ``--small`` accounts in a second workspace,
   and ledger history: an approval review and a runtime control per provider, a local and a live
   certification run for 40 account subjects, and a later failed run for 10 of them;
3. measures, ``--rounds`` times each (after one warm-up): ``provider_readiness_projection`` for
   both workspaces (time and SQL queries), ``GET /api/v1/provider-readiness`` through Django's
   test client with a bearer token (the whole request: authentication, access, projection,
   JSON), and one ``decide_account`` — the check the delivery worker makes before every provider
   call;
4. prints a table and writes bench/results/readiness.json.

Exit status 1 when the projection's query count grows with the account count.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import secrets
import statistics
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

DEFAULT_DATABASE_URL = "postgres://postgres@127.0.0.1:5432/herald_bench_readiness"
RESULTS = ROOT / "bench" / "results" / "readiness.json"


def ensure_database(database_url: str) -> None:
    import psycopg
    from psycopg import sql

    parts = urlsplit(database_url)
    name = parts.path.lstrip("/")
    if not name.startswith("herald_bench"):
        raise SystemExit(
            f"refusing to manage database {name!r}: its name must start with herald_bench"
        )
    admin_url = parts._replace(path="/postgres").geturl()
    with psycopg.connect(admin_url, autocommit=True, connect_timeout=5) as conn:
        conn.execute(
            sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
        )
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))


def configure(args: argparse.Namespace) -> None:
    from cryptography.fernet import Fernet

    for key in [
        k
        for k in os.environ
        if k.startswith("HERALD_") or k == "SERVICE_PROVIDER_CERTIFICATION_ENFORCED"
    ]:
        del os.environ[key]
    os.environ.update(
        DJANGO_SETTINGS_MODULE="config.settings",
        DATABASE_URL=args.database_url,
        SECRET_KEY="bench-only-" + secrets.token_urlsafe(32),
        HERALD_ENVIRONMENT="local",
        HERALD_CREDENTIALS_KEY=Fernet.generate_key().decode(),
        HERALD_LOG_LEVEL="WARNING",
    )
    os.environ.pop("REDIS_URL", None)  # the in-process cache: no rate-limit counters in Redis

    import django

    django.setup()


def seed(args: argparse.Namespace) -> dict[str, Any]:
    from providers import PROVIDERS, credentials, get_adapter
    from publishing.models import Account, ProviderApp
    from readiness import ledgers
    from workspaces.access import Actor
    from workspaces.models import User
    from workspaces.services import api_token_create, organization_create, workspace_create

    owner = User.objects.create_user("bench-readiness@example.invalid", secrets.token_urlsafe(16))
    operator = User.objects.create_user(
        "bench-operator@example.invalid",
        secrets.token_urlsafe(16),
        is_superuser=True,
        is_staff=True,
    )
    actor = Actor(user=owner)
    organization = organization_create(actor=actor, name="Bench")
    big = workspace_create(actor=actor, organization_id=organization.pk, name="Three hundred")
    small = workspace_create(actor=actor, organization_id=organization.pk, name="Small")
    sealed = credentials.encrypt({"access_token": secrets.token_urlsafe(24)})
    apps = {
        index: ProviderApp.objects.create(
            provider="mastodon",
            instance_url=f"https://m{index}.example",
            redirect_uri="http://127.0.0.1/api/v1/accounts/oauth/callback",
            credentials_encrypted=credentials.encrypt({"client_id": "c"}),
        )
        for index in range(7)
    }

    def accounts(workspace: Any, count: int, prefix: str) -> list[Account]:
        rows = []
        for i in range(count):
            provider = PROVIDERS[i % len(PROVIDERS)]
            caps = get_adapter(provider).capabilities
            rows.append(
                Account(
                    workspace=workspace,
                    provider=provider,
                    external_id=f"{prefix}-{i}",
                    username=f"{prefix}{i}",
                    instance_url=f"https://m{i % 7}.example" if caps.federated else "",
                    app=apps[i % 7] if caps.federated else None,
                    account_kind=caps.account_kind,
                    granted_scopes=list(caps.required_scopes),
                    credentials_encrypted=sealed,
                )
            )
        return Account.objects.bulk_create(rows)

    big_accounts = accounts(big, args.accounts, "big")
    accounts(small, args.small, "small")
    for provider in PROVIDERS:
        ledgers.approval_review_append(operator=operator, provider=provider, outcome="approved")
        ledgers.runtime_control_append(
            operator=operator, provider=provider, mode="enabled", reason="rollout"
        )
    from tests.readiness_support import checks_for

    for index, account in enumerate(big_accounts[:40]):
        profile = get_adapter(account.provider).capabilities.profiles[0].key
        kinds = ("local", "live", "live") if index < 10 else ("local", "live")
        for number, kind in enumerate(kinds):
            ledgers.certification_append(
                operator=operator,
                kind=kind,
                provider=account.provider,
                operation="publish_immediate",
                output_profile=profile,
                account_id=account.pk,
                external_result_reference=f"bench post {index}",
                checks=checks_for(
                    account.provider,
                    "publish_immediate",
                    failed=("provider_result",) if number == 2 else (),
                ),
            )
    _, token = api_token_create(
        user=owner, name="bench", permissions=["api:read"], workspace_id=None
    )
    return {"big": big, "small": small, "token": token, "account": big_accounts[0]}


def timed(function: Any, rounds: int) -> tuple[list[float], int]:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    function()  # warm-up
    times = []
    queries = 0
    for _ in range(rounds):
        with CaptureQueriesContext(connection) as captured:
            started = time.perf_counter()
            function()
            times.append(time.perf_counter() - started)
        queries = len(captured)
    return times, queries


def summary(times: list[float], queries: int) -> dict[str, Any]:
    ordered = sorted(times)
    return {
        "median_ms": round(statistics.median(ordered) * 1000, 2),
        "p95_ms": round(ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))] * 1000, 2),
        "min_ms": round(ordered[0] * 1000, 2),
        "queries": queries,
    }


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--database-url", default=DEFAULT_DATABASE_URL)
    parser.add_argument("--accounts", type=int, default=300)
    parser.add_argument("--small", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--output", type=Path, default=RESULTS)
    args = parser.parse_args()

    ensure_database(args.database_url)
    configure(args)
    from django.core.management import call_command
    from django.test import Client

    from publishing.models import Account
    from readiness import services as readiness
    from readiness.projection import provider_readiness_projection

    call_command("migrate", verbosity=0)
    seeded = seed(args)
    client = Client(HTTP_AUTHORIZATION=f"Bearer {seeded['token']}")
    account = Account.objects.get(pk=seeded["account"].pk)

    def http() -> None:
        response = client.get(
            "/api/v1/provider-readiness",
            {"workspace_id": str(seeded["big"].pk)},
            HTTP_HOST="127.0.0.1",
        )
        assert response.status_code == 200, response.content[:300]

    results = {
        f"projection_{args.accounts}_accounts": summary(
            *timed(
                lambda: provider_readiness_projection(workspace_id=seeded["big"].pk), args.rounds
            )
        ),
        f"projection_{args.small}_accounts": summary(
            *timed(
                lambda: provider_readiness_projection(workspace_id=seeded["small"].pk), args.rounds
            )
        ),
        f"http_provider_readiness_{args.accounts}_accounts": summary(*timed(http, args.rounds)),
        "decide_account_per_delivery": summary(
            *timed(
                lambda: readiness.decide_account(
                    account=account, operation="publish_immediate", profile="mastodon.post"
                ),
                args.rounds * 10,
            )
        ),
    }
    big = results[f"projection_{args.accounts}_accounts"]
    small = results[f"projection_{args.small}_accounts"]
    decisions = len(provider_readiness_projection(workspace_id=seeded["big"].pk)["providers"])
    document = {
        "benchmark": "readiness",
        "recorded_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": {
            "python": platform.python_version(),
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
        },
        "database": "postgresql",
        "accounts": args.accounts,
        "providers": decisions,
        "rounds": args.rounds,
        "results": results,
        "queries_constant": big["queries"] == small["queries"],
    }
    print(f"{'target':44} {'median ms':>10} {'p95 ms':>10} {'queries':>8}")
    for name, row in results.items():
        print(f"{name:44} {row['median_ms']:>10} {row['p95_ms']:>10} {row['queries']:>8}")
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(document, indent=2) + "\n")
    print(
        f"written to {args.output.relative_to(ROOT) if args.output.is_relative_to(ROOT) else args.output}"
    )
    if not document["queries_constant"]:
        print("FAIL: the projection's query count grows with the account count")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
