"""Voice profiles: operations, the
default-profile rules, revision-checked replacement, assignments and the effective profile."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
from django.apps import apps as django_apps
from django.db import connection
from rest_framework.test import APIClient

from publishing.models import Account, Publication
from tests.endpoint_support import MEMBERS_ONLY, DetailTests, WorkspaceListTests
from tests.problem_asserts import assert_invalid, assert_problem
from voice import selectors, services
from voice.definition import MEMBERS
from voice.models import DEFAULT_PROFILE_NAME, VoiceProfile
from workspaces.access import Actor
from workspaces.models import User, Workspace, WorkspaceMembership

pytestmark = pytest.mark.django_db

API = "/api/v1"


def ok(response: Any, status: int = 200) -> Any:
    assert response.status_code == status, (response.status_code, response.content[:800])
    return response.json() if response.content else None


def default_profile(workspace: Any) -> VoiceProfile:
    return VoiceProfile.objects.get(workspace=workspace, is_default=True)


def create_profile(
    client: APIClient, workspace: Any, name: str, definition: Any = None
) -> dict[str, Any]:
    body: dict[str, Any] = {"workspace_id": str(workspace.pk), "name": name}
    if definition is not None:
        body["definition"] = definition
    return ok(client.post(f"{API}/voice-profiles", body, format="json"), 201)  # type: ignore[no-any-return]


def replace(client: APIClient, profile: dict[str, Any], **changes: Any) -> Any:
    body = {
        "workspace_id": profile["workspace_id"],
        "name": profile["name"],
        "definition": profile["definition"],
        "expected_revision": profile["revision"],
        **changes,
    }
    return client.put(f"{API}/voice-profiles/{profile['id']}", body, format="json")


@pytest.fixture
def member(make_user: Callable[..., User], workspace: Any) -> Callable[[str], User]:
    def make(role: str) -> User:
        person = make_user()
        WorkspaceMembership.objects.create(workspace=workspace, user=person, role=role)
        return person

    return make


@pytest.fixture
def account(workspace: Any) -> Account:
    return Account.objects.create(
        workspace=workspace,
        provider="mastodon",
        external_id="1",
        username="herald",
        instance_url="https://social.example",
    )


# --- The default profile ------------------------------------------------------------------------


def test_a_new_workspace_gets_its_default_voice(owner_client: APIClient, workspace: Any) -> None:
    page = ok(owner_client.get(f"{API}/voice-profiles", {"workspace_id": str(workspace.pk)}))

    assert page["$schema"].endswith("/api/v1/schemas/VoiceProfilePage.json")
    assert page["next_cursor"] is None
    [profile] = page["items"]
    assert profile["$schema"].endswith("/api/v1/schemas/VoiceProfile.json")
    assert profile["name"] == DEFAULT_PROFILE_NAME == "Default voice"
    assert profile["is_default"] is True
    assert profile["workspace_id"] == str(workspace.pk)
    assert profile["revision"] == 1
    assert profile["schema_version"] == 1
    assert profile["assigned_account_ids"] == []
    assert set(profile) == {
        "$schema",
        "id",
        "workspace_id",
        "name",
        "is_default",
        "assigned_account_ids",
        "revision",
        "schema_version",
        "created_at",
        "updated_at",
        "definition",
    }
    assert sorted(profile["definition"]) == sorted(MEMBERS)
    assert all(value in ("", []) for value in profile["definition"].values())


def test_the_default_is_created_in_the_workspace_transaction(user: User, organization: Any) -> None:
    from workspaces.services import workspace_create

    workspace = workspace_create(
        actor=Actor(user=user), organization_id=organization.pk, name="Second"
    )
    assert VoiceProfile.objects.filter(workspace=workspace, is_default=True).count() == 1


def test_the_data_migration_gives_existing_workspaces_a_default(organization: Any) -> None:
    from importlib import import_module

    migration = import_module("voice.migrations.0002_default_voice_for_existing_workspaces")
    older = Workspace.objects.create(organization=organization, name="Before voice profiles")
    assert not VoiceProfile.objects.filter(workspace=older).exists()

    migration.create_default_profiles(django_apps, None)
    migration.create_default_profiles(django_apps, None)  # a second run changes nothing

    [profile] = VoiceProfile.objects.filter(workspace=older)
    assert (profile.name, profile.is_default, profile.revision) == (DEFAULT_PROFILE_NAME, True, 1)
    assert (
        VoiceProfile.objects.filter(is_default=True).values("workspace").count()
        == Workspace.objects.count()
    )


def test_the_default_and_the_last_profile_cannot_be_deleted(
    owner_client: APIClient, workspace: Any
) -> None:
    only = default_profile(workspace)
    body = assert_problem(
        owner_client.delete(f"{API}/voice-profiles/{only.pk}"), 409, "last_voice_profile"
    )
    assert body["detail"]

    second = create_profile(owner_client, workspace, "Second")
    assert second["is_default"] is False
    assert_problem(
        owner_client.delete(f"{API}/voice-profiles/{only.pk}"), 409, "default_voice_profile"
    )
    assert VoiceProfile.objects.filter(workspace=workspace).count() == 2

    made = ok(owner_client.post(f"{API}/voice-profiles/{second['id']}/default"))
    assert made["is_default"] is True
    assert (
        default_profile(workspace).pk == made["id"]
        or str(default_profile(workspace).pk) == made["id"]
    )
    assert VoiceProfile.objects.filter(workspace=workspace, is_default=True).count() == 1

    assert owner_client.delete(f"{API}/voice-profiles/{only.pk}").status_code == 204
    assert_problem(
        owner_client.delete(f"{API}/voice-profiles/{second['id']}"), 409, "last_voice_profile"
    )
    assert_problem(owner_client.get(f"{API}/voice-profiles/{only.pk}"), 404, "not_found")


def test_making_the_default_the_default_again_changes_nothing(
    owner_client: APIClient, workspace: Any
) -> None:
    profile = default_profile(workspace)
    made = ok(owner_client.post(f"{API}/voice-profiles/{profile.pk}/default"))
    assert made["is_default"] is True
    assert made["revision"] == 1


# --- Create, read, list --------------------------------------------------------------------------


def test_create_returns_the_profile_with_location(owner_client: APIClient, workspace: Any) -> None:
    response = owner_client.post(
        f"{API}/voice-profiles",
        {
            "workspace_id": str(workspace.pk),
            "name": "  Founder voice ",
            "definition": {"traits": ["Direct"]},
        },
        format="json",
    )
    profile = ok(response, 201)
    assert response["Location"] == f"/api/v1/voice-profiles/{profile['id']}"
    assert profile["name"] == "Founder voice"
    assert profile["definition"]["traits"] == ["Direct"]
    assert profile["revision"] == 1
    assert ok(owner_client.get(response["Location"])) == profile


def test_create_without_definition_stores_an_empty_one(
    owner_client: APIClient, workspace: Any
) -> None:
    profile = create_profile(owner_client, workspace, "Plain")
    assert all(value in ("", []) for value in profile["definition"].values())


def test_names_are_unique_per_workspace_case_insensitively(
    owner_client: APIClient, workspace: Any, user: User, organization: Any
) -> None:
    create_profile(owner_client, workspace, "Brand")
    response = owner_client.post(
        f"{API}/voice-profiles", {"workspace_id": str(workspace.pk), "name": "bRAND"}, format="json"
    )
    assert_problem(response, 409, "name_taken")
    assert_problem(
        owner_client.post(
            f"{API}/voice-profiles",
            {"workspace_id": str(workspace.pk), "name": "default VOICE"},
            format="json",
        ),
        409,
        "name_taken",
    )
    assert_problem(
        owner_client.post(
            f"{API}/voice-profiles",
            {"workspace_id": str(workspace.pk), "name": "  BRAND\t"},
            format="json",
        ),
        409,
        "name_taken",
    )
    other = create_profile(owner_client, workspace, "Other")
    assert_problem(replace(owner_client, other, name="BRAND"), 409, "name_taken")
    assert VoiceProfile.objects.get(pk=other["id"]).revision == 1

    # Another workspace may use the same name.
    from workspaces.services import workspace_create

    elsewhere = workspace_create(
        actor=Actor(user=user), organization_id=organization.pk, name="Elsewhere"
    )
    create_profile(owner_client, elsewhere, "Brand")


def test_the_default_is_listed_last_and_the_limit_bounded(
    owner_client: APIClient, workspace: Any
) -> None:
    names = [f"Profile {n}" for n in range(3)]
    for name in names:
        create_profile(owner_client, workspace, name)
    first = ok(
        owner_client.get(f"{API}/voice-profiles", {"workspace_id": str(workspace.pk), "limit": 2})
    )
    assert [p["name"] for p in first["items"]] == ["Profile 2", "Profile 1"]
    second = ok(
        owner_client.get(
            f"{API}/voice-profiles",
            {"workspace_id": str(workspace.pk), "limit": 2, "cursor": first["next_cursor"]},
        )
    )
    assert [p["name"] for p in second["items"]] == ["Profile 0", DEFAULT_PROFILE_NAME]
    assert second["next_cursor"] is None
    assert_invalid(
        owner_client.get(f"{API}/voice-profiles", {"workspace_id": str(workspace.pk), "limit": 0}),
        "query.limit",
    )


def test_access_rules(
    workspace: Any,
    member: Callable[[str], User],
    bearer_client: Callable[..., APIClient],
) -> None:
    """Beyond the standard reads and delete (TestVoiceProfileEndpoints): create, make default
    and replace."""
    profile = default_profile(workspace)
    viewer = bearer_client(member("viewer"))
    assert_problem(
        viewer.post(
            f"{API}/voice-profiles", {"workspace_id": str(workspace.pk), "name": "X"}, format="json"
        ),
        403,
        "role_too_low",
    )
    assert_problem(viewer.post(f"{API}/voice-profiles/{profile.pk}/default"), 403, "role_too_low")
    create_profile(bearer_client(member("editor")), workspace, "Editor's")
    read_only = bearer_client(
        workspace.memberships.get(role="admin").user, permissions=("api:read",)
    )
    assert_problem(
        replace(read_only, ok(read_only.get(f"{API}/voice-profiles/{profile.pk}"))),
        403,
        "token_permission",
    )
    assert VoiceProfile.objects.filter(workspace=workspace).count() == 2


# --- Replace (PUT) --------------------------------------------------------------------------------


def test_replace_increments_the_revision(owner_client: APIClient, workspace: Any) -> None:
    profile = ok(owner_client.get(f"{API}/voice-profiles/{default_profile(workspace).pk}"))
    updated = ok(
        replace(owner_client, profile, name="House voice", definition={"traits": ["Warm"]})
    )
    assert updated["revision"] == 2
    assert updated["name"] == "House voice"
    assert updated["definition"]["traits"] == ["Warm"]
    assert updated["is_default"] is True
    assert updated["updated_at"] >= profile["updated_at"]
    again = ok(replace(owner_client, updated, definition={}))
    assert again["revision"] == 3
    assert again["definition"]["traits"] == []


def test_a_stale_revision_is_a_conflict_and_changes_nothing(
    owner_client: APIClient, workspace: Any
) -> None:
    profile = ok(owner_client.get(f"{API}/voice-profiles/{default_profile(workspace).pk}"))
    current = ok(replace(owner_client, profile, definition={"traits": ["First"]}))

    response = replace(owner_client, profile, name="Lost update", definition={"traits": ["Second"]})

    body = assert_problem(response, 409, "revision_conflict")
    assert body["current_revision"] == 2
    stored = ok(owner_client.get(f"{API}/voice-profiles/{profile['id']}"))
    assert stored == current
    assert stored["name"] == profile["name"]
    assert stored["definition"]["traits"] == ["First"]


def test_a_stale_revision_is_a_conflict_even_when_nothing_would_change(
    owner_client: APIClient, workspace: Any
) -> None:
    """The check is on the revision, not on the content: resending exactly what is stored
    with an old revision is still a 409, and the stored profile keeps revision and time."""
    profile = ok(owner_client.get(f"{API}/voice-profiles/{default_profile(workspace).pk}"))
    current = ok(replace(owner_client, profile, definition={"traits": ["Same"]}))

    stale_but_identical = {**current, "revision": 1}
    body = assert_problem(replace(owner_client, stale_but_identical), 409, "revision_conflict")
    assert body["current_revision"] == 2
    assert ok(owner_client.get(f"{API}/voice-profiles/{profile['id']}")) == current
    future = {**current, "revision": 3}
    assert_problem(replace(owner_client, future), 409, "revision_conflict")
    assert ok(owner_client.get(f"{API}/voice-profiles/{profile['id']}")) == current


def test_replace_requires_every_member(owner_client: APIClient, workspace: Any) -> None:
    profile = default_profile(workspace)
    response = owner_client.put(f"{API}/voice-profiles/{profile.pk}", {"unknown": 1}, format="json")
    assert_invalid(
        response,
        "body.definition",
        "body.expected_revision",
        "body.name",
        "body.workspace_id",
        "body.unknown",
    )
    assert_invalid(
        replace(
            owner_client,
            {
                "id": str(profile.pk),
                "workspace_id": str(workspace.pk),
                "name": "",
                "definition": {},
                "revision": 0,
            },
        ),
        "body.name",
        "body.expected_revision",
    )


def test_replace_names_the_profiles_own_workspace(
    owner_client: APIClient, workspace: Any, user: User, organization: Any
) -> None:
    from workspaces.services import workspace_create

    other = workspace_create(actor=Actor(user=user), organization_id=organization.pk, name="Other")
    profile = ok(owner_client.get(f"{API}/voice-profiles/{default_profile(workspace).pk}"))
    body = assert_invalid(
        replace(owner_client, profile, workspace_id=str(other.pk)), "body.workspace_id"
    )
    assert body["errors"][0]["value"] == str(other.pk)
    assert VoiceProfile.objects.get(pk=profile["id"]).revision == 1


class LockRace:
    """Makes ``threads`` replacements really race, whatever the scheduler does.

    It wraps ``voice.services._locked_profile`` (the locked re-read that precedes the revision
    check): every thread waits at a barrier until all of them have done every unlocked step
    (profile lookup, access check, validation: each has seen revision 1), then all ask for the
    row lock at once. The first to get it holds it until PostgreSQL reports every other thread
    waiting on a lock (``pg_stat_activity``), so the others are provably blocked on the row
    and not merely late; only then does it write and commit. ``locking=False`` replaces the
    locked read by a plain one and has everyone read before anyone writes: the lost update the
    lock exists to prevent, which shows the harness detects a missing lock."""

    def __init__(
        self, monkeypatch: pytest.MonkeyPatch, threads: int, *, locking: bool = True
    ) -> None:
        self.threads = threads
        self.arrived = threading.Barrier(threads, timeout=20)
        self.read_done = threading.Barrier(threads, timeout=20)
        self.guard = threading.Lock()
        self.holders = 0
        self.waiters_seen = 0
        self.locking = locking
        locked_read = services._locked_profile
        monkeypatch.setattr(services, "_locked_profile", self.wrap(locked_read))

    def wrap(self, locked_read: Callable[[Any], Any]) -> Callable[[Any], Any]:
        def racing(pk: Any) -> Any:
            self.arrived.wait()
            if not self.locking:
                profile = VoiceProfile.objects.filter(pk=pk).first()
                self.read_done.wait()  # everyone has read revision 1 before anyone writes
                return profile
            profile = locked_read(pk)
            with self.guard:
                self.holders += 1
                first = self.holders == 1
            if first:
                self.waiters_seen = self.wait_for_blocked(self.threads - 1)
            return profile

        return racing

    @staticmethod
    def wait_for_blocked(expected: int) -> int:
        deadline = time.monotonic() + 15
        waiting = 0
        with connection.cursor() as cursor:
            while time.monotonic() < deadline:
                cursor.execute(
                    "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                    "AND pid <> pg_backend_pid() AND wait_event_type = 'Lock'"
                )
                waiting = cursor.fetchone()[0]
                if waiting >= expected:
                    break
                time.sleep(0.02)
        return int(waiting)

    def run(self, target: Callable[[int], Any]) -> list[Any]:
        results: list[Any] = []
        lock = threading.Lock()

        def call(n: int) -> None:
            try:
                outcome = target(n)
            except Exception as exc:  # the test records the domain error's code
                outcome = getattr(exc, "code", repr(exc))
            finally:
                connection.close()  # threads must release their connections
            with lock:
                results.append(outcome)

        workers = [threading.Thread(target=call, args=(n,)) for n in range(self.threads)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join(timeout=60)
        assert not any(worker.is_alive() for worker in workers)
        return results


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_two_concurrent_replacements_with_the_same_revision_one_wins(
    user: User, workspace: Any, make_token: Callable[..., str], monkeypatch: pytest.MonkeyPatch
) -> None:
    profile = default_profile(workspace)
    token = make_token(user)
    race = LockRace(monkeypatch, 2)

    def put(n: int) -> int:
        name = ("Left", "Right")[n]
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
        response = client.put(
            f"{API}/voice-profiles/{profile.pk}",
            {
                "workspace_id": str(workspace.pk),
                "name": name,
                "definition": {"traits": [name]},
                "expected_revision": 1,
            },
            format="json",
        )
        return int(response.status_code)

    statuses = race.run(put)

    assert race.waiters_seen == 1  # the loser was blocked on the row lock, not just late
    assert sorted(statuses) == [200, 409]
    stored = VoiceProfile.objects.get(pk=profile.pk)
    assert stored.revision == 2
    assert stored.definition["traits"] == [stored.name]


def _replace_as(user: User, workspace: Any, profile: VoiceProfile) -> Callable[[int], str]:
    def replace_profile(n: int) -> str:
        services.voice_profile_replace(
            actor=Actor(user=user),
            voice_profile_id=profile.pk,
            workspace_id=workspace.pk,
            name=f"Name {n}",
            definition={"traits": [f"Trait {n}"]},
            expected_revision=1,
        )
        return "ok"

    return replace_profile


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_the_service_serializes_replacements_under_a_row_lock(
    user: User, workspace: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Four threads, one expected revision: exactly one wins, the others wait on the lock and
    then see the new revision."""
    profile = default_profile(workspace)
    race = LockRace(monkeypatch, 4)
    results = race.run(_replace_as(user, workspace, profile))
    assert race.waiters_seen == 3
    assert sorted(results) == ["ok", "revision_conflict", "revision_conflict", "revision_conflict"]
    assert VoiceProfile.objects.get(pk=profile.pk).revision == 2


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_the_race_harness_detects_a_missing_lock(
    user: User, workspace: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same race against a replacement that reads without the lock: both threads pass the
    revision check and both "win" (a lost update). The tests above would fail on such code."""
    profile = default_profile(workspace)
    race = LockRace(monkeypatch, 2, locking=False)
    results = race.run(_replace_as(user, workspace, profile))
    assert results == ["ok", "ok"]
    assert VoiceProfile.objects.get(pk=profile.pk).revision == 2  # two writes, one revision


# --- Assignments, overrides and the effective profile ---------------------------------------------


def test_effective_profile_publication_override_then_assignment_then_default(
    owner_client: APIClient, workspace: Any, account: Account
) -> None:
    default = default_profile(workspace)
    assigned = create_profile(owner_client, workspace, "Assigned")
    chosen = create_profile(owner_client, workspace, "Chosen")

    assert (
        selectors.voice_profile_effective(workspace_id=workspace.pk, account_id=account.pk)
        == default
    )

    result = ok(
        owner_client.put(
            f"{API}/voice-profile-assignments/{account.pk}",
            {"voice_profile_id": assigned["id"]},
            format="json",
        )
    )
    assert result["$schema"].endswith("/api/v1/schemas/VoiceProfileAssignment.json")
    assert result == {
        "$schema": result["$schema"],
        "account_id": str(account.pk),
        "workspace_id": str(workspace.pk),
        "voice_profile_id": assigned["id"],
        "effective_voice_profile_id": assigned["id"],
    }
    assert ok(owner_client.get(f"{API}/voice-profiles/{assigned['id']}"))[
        "assigned_account_ids"
    ] == [str(account.pk)]
    assert (
        str(selectors.voice_profile_effective(workspace_id=workspace.pk, account_id=account.pk).pk)
        == assigned["id"]
    )

    created = ok(
        owner_client.post(
            f"{API}/publications",
            {
                "workspace_id": str(workspace.pk),
                "text": "Hello",
                "voice_profile_id": chosen["id"],
                "destinations": [{"account_id": str(account.pk)}],
            },
            format="json",
        ),
        201,
    )
    assert created["voice_profile_id"] == chosen["id"]
    assert (
        ok(owner_client.get(f"{API}/publications/{created['id']}"))["voice_profile_id"]
        == chosen["id"]
    )
    effective = selectors.voice_profile_effective(
        workspace_id=workspace.pk, account_id=account.pk, publication_id=created["id"]
    )
    assert str(effective.pk) == chosen["id"]

    # Replace without the member keeps the override; null clears it.
    kept = ok(
        owner_client.put(
            f"{API}/publications/{created['id']}",
            {
                "expected_revision": created["revision"],
                "text": "Hello again",
                "destinations": [{"account_id": str(account.pk)}],
            },
            format="json",
        )
    )
    assert kept["voice_profile_id"] == chosen["id"]
    assert selectors.publication_voice_profile_id(publication_id=created["id"]) == chosen["id"]
    cleared_override = ok(
        owner_client.put(
            f"{API}/publications/{created['id']}",
            {
                "expected_revision": kept["revision"],
                "text": "Hello again",
                "voice_profile_id": None,
                "destinations": [{"account_id": str(account.pk)}],
            },
            format="json",
        )
    )
    assert cleared_override["voice_profile_id"] is None
    assert selectors.publication_voice_profile_id(publication_id=created["id"]) is None
    effective = selectors.voice_profile_effective(
        workspace_id=workspace.pk, account_id=account.pk, publication_id=created["id"]
    )
    assert str(effective.pk) == assigned["id"]

    cleared = ok(
        owner_client.put(
            f"{API}/voice-profile-assignments/{account.pk}",
            {"voice_profile_id": None},
            format="json",
        )
    )
    assert cleared["voice_profile_id"] is None
    assert cleared["effective_voice_profile_id"] == str(default.pk)


def test_deleting_an_assigned_profile_falls_back_to_the_default(
    owner_client: APIClient, workspace: Any, account: Account
) -> None:
    assigned = create_profile(owner_client, workspace, "Temporary")
    ok(
        owner_client.put(
            f"{API}/voice-profile-assignments/{account.pk}",
            {"voice_profile_id": assigned["id"]},
            format="json",
        )
    )
    assert owner_client.delete(f"{API}/voice-profiles/{assigned['id']}").status_code == 204
    assert selectors.voice_profile_effective(
        workspace_id=workspace.pk, account_id=account.pk
    ) == default_profile(workspace)


def test_publication_with_an_unknown_voice_profile_is_refused(
    owner_client: APIClient, workspace: Any, account: Account, user: User, organization: Any
) -> None:
    from workspaces.services import workspace_create

    foreign = default_profile(
        workspace_create(actor=Actor(user=user), organization_id=organization.pk, name="Foreign")
    )
    for voice_profile_id in (str(foreign.pk), "00000000-0000-0000-0000-000000000000", "nope"):
        response = owner_client.post(
            f"{API}/publications",
            {
                "workspace_id": str(workspace.pk),
                "text": "Hello",
                "voice_profile_id": voice_profile_id,
                "destinations": [{"account_id": str(account.pk)}],
            },
            format="json",
        )
        assert_problem(response, 404, "not_found")
    assert not Publication.objects.exists()


def test_assignment_errors(
    owner_client: APIClient,
    workspace: Any,
    account: Account,
    member: Callable[[str], User],
    bearer_client: Callable[..., APIClient],
    user: User,
    organization: Any,
) -> None:
    from workspaces.services import workspace_create

    url = f"{API}/voice-profile-assignments/{account.pk}"
    foreign = default_profile(
        workspace_create(actor=Actor(user=user), organization_id=organization.pk, name="Foreign")
    )
    assert_problem(
        owner_client.put(url, {"voice_profile_id": str(foreign.pk)}, format="json"),
        404,
        "not_found",
    )
    assert_problem(
        owner_client.put(
            f"{API}/voice-profile-assignments/00000000-0000-0000-0000-000000000000",
            {"voice_profile_id": None},
            format="json",
        ),
        404,
        "not_found",
    )
    assert_invalid(owner_client.put(url, {}, format="json"), "body.voice_profile_id")
    viewer = bearer_client(member("viewer"))
    assert_problem(viewer.put(url, {"voice_profile_id": None}, format="json"), 403, "role_too_low")
    account.status = Account.Status.DISCONNECTED
    account.save()
    assert_problem(
        owner_client.put(url, {"voice_profile_id": None}, format="json"), 404, "not_found"
    )


def test_deletion_preview_counts_voice_profiles(workspace: Any, user: User) -> None:
    from voice.lifecycle import data_summary

    assert data_summary(workspace) == {"voice_profiles": 1}


def test_the_list_costs_the_same_queries_whatever_its_length(
    owner_client: APIClient, workspace: Any, account: Account
) -> None:
    from django.db import connection as db
    from django.test.utils import CaptureQueriesContext

    def count() -> int:
        with CaptureQueriesContext(db) as queries:
            ok(owner_client.get(f"{API}/voice-profiles", {"workspace_id": str(workspace.pk)}))
        return len(queries)

    count()  # warm-up: the token's last-use time is written once
    few = count()
    for n in range(5):
        profile = create_profile(owner_client, workspace, f"Extra {n}")
    ok(
        owner_client.put(
            f"{API}/voice-profile-assignments/{account.pk}",
            {"voice_profile_id": profile["id"]},
            format="json",
        )
    )
    assert count() == few


# --- The standard endpoint tests (tests/endpoint_support.py) ----------------------------------


class TestVoiceProfileEndpoints(WorkspaceListTests, DetailTests):
    list_url = f"{API}/voice-profiles"
    schema = "VoiceProfile"
    write_role = "editor"
    foreign_answer = MEMBERS_ONLY
    not_allowed = (("patch", "detail"), ("delete", "list"))

    def make(self, workspace: Workspace, owner: User) -> str:
        name = f"Profile {VoiceProfile.objects.count()}"
        profile = services.voice_profile_create(
            actor=Actor(user=owner), workspace_id=workspace.pk, name=name
        )
        return str(profile.pk)

    def detail_url(self, obj: str) -> str:
        return f"{API}/voice-profiles/{obj}"
