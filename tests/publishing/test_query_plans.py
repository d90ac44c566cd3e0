"""The hot reads stay flat as the data grows: PostgreSQL plans them on indexes.

The data is seeded the way ``bench/scale.py`` seeds a million publications (SQL over
``generate_series``), at a few thousand rows per table with fresh statistics (``ANALYZE``), so
that the planner's choices mean something. Each request runs through the API (or the service),
its SQL is captured as the ORM wrote it, and every captured statement is planned again with
``EXPLAIN (ANALYZE, FORMAT JSON)`` (``EXPLAIN`` alone for writes), sequential scans allowed.
On the large tables, no statement may:

- scan sequentially;
- read rows that a condition then throws away (more than a handful: a condition the index does
  not cover makes the cost grow with the table, e.g. every scheduled destination read to find
  the due ones, or every newer publication read to find the page after a deep cursor);
- sort publications for a page (the index gives the order; a sort reads every match).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from bench.scale import bulk_access_audit, bulk_accounts, bulk_filler_workspaces, bulk_publications

pytestmark = [pytest.mark.postgres, pytest.mark.django_db]

LARGE_TABLES = {
    "publishing_publication",
    "publishing_destination",
    "publishing_publicationevent",
    "workspaces_accessauditevent",
    "publishing_account",
}
FILLER_WORKSPACES = 29
PUBLICATIONS = 400  # per workspace
ACCOUNTS = 150
AUDIT_EVENTS = 200
DEEP_LIMIT, DEEP_CURSORS = 4, 50  # 200 publications deep
REMOVED_AT_MOST = 20  # rows read then discarded by a filter, per scan


@pytest.fixture
def seeded(user: Any, organization: Any, workspace: Any) -> dict[str, Any]:
    from providers import credentials
    from publishing.models import ProviderApp

    now = timezone.now()
    app = ProviderApp.objects.create(
        provider="mastodon",
        instance_url="https://m0.example",
        credentials_encrypted=credentials.encrypt({"client_id": "c"}),
    )
    sealed = credentials.encrypt({"access_token": "t"})
    with connection.cursor() as cursor:
        fillers = bulk_filler_workspaces(
            cursor, organization_id=organization.pk, count=FILLER_WORKSPACES, now=now, tag="plans"
        )
        everyone = [str(workspace.pk), *fillers]
        bulk_accounts(
            cursor,
            workspace_ids=everyone,
            per_workspace=ACCOUNTS,
            credentials=sealed,
            mastodon_app_ids=[str(app.pk)],
            now=now,
            tag="plans",
        )
        bulk_publications(
            cursor,
            workspace_ids=everyone,
            per_workspace=PUBLICATIONS,
            accounts_per_workspace=ACCOUNTS,
            destinations=2,
            events=2,
            owner_id=user.pk,
            now=now,
        )
        bulk_access_audit(
            cursor,
            workspace_ids=everyone,
            per_workspace=AUDIT_EVENTS,
            actor_user_id=user.pk,
            now=now,
        )
        cursor.execute("ANALYZE")
    return {"workspace": workspace}


@pytest.fixture
def explain() -> Iterator[Callable[[list[dict[str, str]]], list[tuple[str, dict[str, Any]]]]]:
    def plans(queries: list[dict[str, str]]) -> list[tuple[str, dict[str, Any]]]:
        found = []
        with connection.cursor() as cursor:
            cursor.execute("SET enable_seqscan = on")
            for query in queries:
                sql = query["sql"]
                verb = sql.lstrip().split(None, 1)[0].upper()
                if verb in ("SELECT", "WITH"):
                    cursor.execute("EXPLAIN (ANALYZE, FORMAT JSON) " + sql)
                elif verb in ("UPDATE", "DELETE"):
                    cursor.execute("EXPLAIN (FORMAT JSON) " + sql)
                else:
                    continue
                found.append((sql, cursor.fetchone()[0][0]["Plan"]))
        return found

    yield plans
    with connection.cursor() as cursor:
        cursor.execute("RESET enable_seqscan")


def _nodes(plan: dict[str, Any]) -> Iterator[dict[str, Any]]:
    yield plan
    for child in plan.get("Plans", []):
        yield from _nodes(child)


def assert_flat(plans: list[tuple[str, dict[str, Any]]]) -> None:
    problems = []
    for sql, plan in plans:
        for node in _nodes(plan):
            relation = node.get("Relation Name")
            if relation not in LARGE_TABLES:
                continue
            if node["Node Type"] == "Seq Scan":
                problems.append(f"Seq Scan on {relation}: {sql}")
            removed = (
                node.get("Rows Removed by Filter", 0) + node.get("Rows Removed by Index Recheck", 0)
            ) * node.get("Actual Loops", 1)
            if removed > REMOVED_AT_MOST:
                problems.append(
                    f"{node['Node Type']} on {relation} ({node.get('Index Name')}) discards {removed} rows "
                    f"(filter {node.get('Filter')}): {sql}"
                )
        if (
            'FROM "publishing_publication"' in sql
            and 'ORDER BY "publishing_publication"."created_at" DESC' in sql
        ):
            sorts = [
                node for node in _nodes(plan) if node["Node Type"] in ("Sort", "Incremental Sort")
            ]
            if sorts:
                problems.append(
                    f"publications sorted ({sorts[0].get('Sort Key')}), not read in index order: {sql}"
                )
    assert not problems, "\n\n".join(problems)


def _request(client: Any, path: str) -> tuple[Any, list[dict[str, str]]]:
    with CaptureQueriesContext(connection) as captured:
        response = client.get(path)
    assert response.status_code == 200, response.content[:500]
    return response, captured.captured_queries


@pytest.fixture
def client(bearer_client: Callable[..., Any], user: Any) -> Any:
    return bearer_client(user)


def test_the_seeded_rows_are_valid_model_instances(seeded: dict[str, Any]) -> None:
    from publishing.models import Account, Destination, Publication, PublicationEvent
    from workspaces.models import AccessAuditEvent

    for model in (Account, Publication, Destination, PublicationEvent, AccessAuditEvent):
        for instance in model.objects.order_by("?")[:20]:
            instance.full_clean(validate_unique=False, validate_constraints=False)


@pytest.mark.parametrize("query", ["", "&status=scheduled", "&status=failed"])
def test_publication_pages_are_index_reads(
    seeded: dict[str, Any], client: Any, explain: Any, query: str
) -> None:
    response, queries = _request(
        client, f"/api/v1/publications?workspace_id={seeded['workspace'].pk}{query}"
    )
    assert len(response.json()["items"]) == 20
    assert_flat(explain(queries))


def test_a_page_50_cursors_deep_starts_at_the_cursor(
    seeded: dict[str, Any], client: Any, explain: Any
) -> None:
    path = f"/api/v1/publications?workspace_id={seeded['workspace'].pk}&limit={DEEP_LIMIT}"
    cursor = None
    for _ in range(DEEP_CURSORS):
        cursor = client.get(path + (f"&cursor={cursor}" if cursor else "")).json()["next_cursor"]
    response, queries = _request(client, f"{path}&cursor={cursor}")
    assert len(response.json()["items"]) == DEEP_LIMIT
    plans = explain(queries)
    assert_flat(plans)
    page = next(
        plan for sql, plan in plans if 'ORDER BY "publishing_publication"."created_at" DESC' in sql
    )
    scan = next(
        node for node in _nodes(page) if node.get("Relation Name") == "publishing_publication"
    )
    assert "created_at" in scan.get("Index Cond", ""), scan  # the index seeks to the cursor


def test_access_audit_page_is_an_index_read(
    seeded: dict[str, Any], client: Any, explain: Any
) -> None:
    response, queries = _request(
        client, f"/api/v1/workspaces/{seeded['workspace'].pk}/access-audit?limit=200"
    )
    assert len(response.json()) == 200
    assert_flat(explain(queries))


def test_account_list_is_an_index_read(seeded: dict[str, Any], client: Any, explain: Any) -> None:
    response, queries = _request(client, f"/api/v1/accounts?workspace_id={seeded['workspace'].pk}")
    assert response.json()["items"]
    assert_flat(explain(queries))


def test_readiness_projection_is_an_index_read(
    seeded: dict[str, Any], client: Any, explain: Any
) -> None:
    response, queries = _request(
        client, f"/api/v1/provider-readiness?workspace_id={seeded['workspace'].pk}"
    )
    assert response.json()["providers"]
    assert_flat(explain(queries))


def test_an_idle_dispatcher_tick_reads_only_indexes(seeded: dict[str, Any], explain: Any) -> None:
    from publishing.models import Destination
    from publishing.services.delivery import delivery_dispatch

    assert Destination.objects.filter(status=Destination.Status.SCHEDULED).count() > 1000
    with CaptureQueriesContext(connection) as captured:
        counts = delivery_dispatch()
    assert counts["enqueued"] == 0  # idle: everything scheduled is in the future
    assert_flat(explain(captured.captured_queries))


def test_the_dispatcher_ranks_due_work_without_jit_compilation(seeded: dict[str, Any]) -> None:
    """PostgreSQL over-estimates the due rows (status and due_at taken as independent), and on a
    large table the ranked query's cost then passes ``jit_above_cost``: an idle tick spent about
    0.3 s compiling it (bench/README.md "Scale benchmark"). It runs with JIT off."""
    from publishing.services.delivery import delivery_dispatch

    seen: list[str] = []

    def observe(execute: Any, sql: str, params: Any, many: bool, context: dict[str, Any]) -> Any:
        if "ROW_NUMBER() OVER" in sql:
            seen.append(context["connection"].connection.execute("SHOW jit").fetchone()[0])
        return execute(sql, params, many, context)

    with connection.cursor() as cursor:
        cursor.execute("SET jit = on")
    try:
        with connection.execute_wrapper(observe):
            delivery_dispatch()
    finally:
        with connection.cursor() as cursor:
            cursor.execute("RESET jit")
    assert seen == ["off"]
