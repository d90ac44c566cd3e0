"""Shared fixtures: users, organizations, workspaces, tokens and authenticated API clients."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from django.core.cache import cache
from django.db import connection
from rest_framework.test import APIClient

from workspaces.access import Actor
from workspaces.models import User


def pytest_collection_modifyitems(config: Any, items: list[Any]) -> None:
    """``@pytest.mark.postgres`` tests run only when the suite runs on PostgreSQL."""
    if connection.vendor == "postgresql":
        return
    skip = pytest.mark.skip(reason="needs PostgreSQL (set DATABASE_URL)")
    for item in items:
        if "postgres" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def django_db_modify_db_settings(
    django_db_modify_db_settings_parallel_suffix: None,
    request: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """Processes started by tests (real Celery workers) must open the same test database, so a
    SQLite run then uses a database FILE instead of the in-memory default: the file named by
    ``HERALD_SQLITE_TEST_NAME`` when set, else a temporary one, chosen only when a collected test
    uses ``worker_database_url`` (the rest of the suite keeps the faster in-memory database)."""
    from django.conf import settings

    default = settings.DATABASES["default"]
    if default["ENGINE"] != "django.db.backends.sqlite3" or default.get("TEST", {}).get("NAME"):
        return
    if any(
        "worker_database_url" in getattr(item, "fixturenames", ()) for item in request.session.items
    ):
        folder = tmp_path_factory.mktemp("sqlite")
        default.setdefault("TEST", {})["NAME"] = str(folder / "test_herald.sqlite3")


@pytest.fixture(scope="session")
def worker_database_url(django_db_setup: None) -> str:
    """``DATABASE_URL`` of the test database pytest-django created, for worker processes."""
    from urllib.parse import quote

    from django.db import connections

    db = connections["default"].settings_dict
    if db["ENGINE"] == "django.db.backends.sqlite3":
        name = str(db["NAME"])
        assert "memory" not in name, f"worker tests need a file database, not {name}"
        return f"sqlite:///{name}"
    credentials = quote(str(db.get("USER") or ""), safe="")
    if db.get("PASSWORD"):
        credentials += ":" + quote(str(db["PASSWORD"]), safe="")
    host = str(db.get("HOST") or "127.0.0.1")
    port = f":{db['PORT']}" if db.get("PORT") else ""
    return f"postgres://{credentials}@{host}{port}/{quote(str(db['NAME']), safe='')}"


@pytest.fixture(scope="session")
def _limits_store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """This session's own SQLite limits file (config/limits.py), never the checkout's .data one
    (other test sessions and `make run` would share its counters)."""
    from django.test import override_settings

    folder = tmp_path_factory.mktemp("limits")
    with override_settings(HERALD_LIMITS_DB=folder / "limits.sqlite3"):
        yield


@pytest.fixture(autouse=True)
def _clear_cache(_limits_store: None) -> Iterator[None]:
    """Rate-limit counters (the cache, the SQLite limits store) and probe results must not leak
    between tests."""
    from config import limits

    cache.clear()
    limits.clear()
    yield
    cache.clear()
    limits.clear()


@pytest.fixture
def make_user(db: Any) -> Callable[..., User]:
    counter = {"n": 0}

    def make(
        email: str | None = None, password: str = "correct horse battery", **extra: Any
    ) -> User:
        counter["n"] += 1
        return User.objects.create_user(
            email or f"user{counter['n']}@example.com", password, **extra
        )

    return make


@pytest.fixture
def user(make_user: Callable[..., User]) -> User:
    return make_user("owner@example.com")


@pytest.fixture
def organization(user: User) -> Any:
    from workspaces.services import organization_create

    return organization_create(actor=Actor(user=user), name="Acme")


@pytest.fixture
def workspace(user: User, organization: Any) -> Any:
    from workspaces.services import workspace_create

    return workspace_create(actor=Actor(user=user), organization_id=organization.pk, name="Main")


@pytest.fixture
def make_token() -> Callable[..., str]:
    """Create an API token and return the full secret string."""
    from workspaces.services import api_token_create

    def make(
        user: User,
        permissions: tuple[str, ...] = ("api:read", "api:write"),
        workspace: Any = None,
        **extra: Any,
    ) -> str:
        _, full = api_token_create(
            user=user,
            name="test",
            permissions=list(permissions),
            workspace_id=str(workspace.pk) if workspace is not None else None,
            **extra,
        )
        return full

    return make


@pytest.fixture
def api_client() -> APIClient:
    return APIClient()


@pytest.fixture
def bearer_client(make_token: Callable[..., str]) -> Callable[..., APIClient]:
    def make(user: User, **token_options: Any) -> APIClient:
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {make_token(user, **token_options)}")
        return client

    return make


@pytest.fixture
def owner_client(bearer_client: Callable[..., APIClient], user: User, workspace: Any) -> APIClient:
    """Bearer client of the organization owner, who is also the workspace admin."""
    return bearer_client(user)


@pytest.fixture
def session_client(user: User) -> APIClient:
    """A signed-in browser session that enforces CSRF like a real browser."""
    from django.utils import timezone

    from workspaces.web_session import SESSION_AUTHENTICATED_AT

    client = APIClient(enforce_csrf_checks=True)
    client.force_login(user)
    session = client.session
    session[SESSION_AUTHENTICATED_AT] = timezone.now().timestamp()
    session.save()
    return client


@pytest.fixture(autouse=True)
def _fast_password_hashing(settings: Any) -> None:
    """PBKDF2 at production strength costs ~0.3 s per user; tests do not need it."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def make_session_client() -> Callable[..., APIClient]:
    """A signed-in browser session (CSRF enforced) for any user.

    ``authenticated_seconds_ago`` sets the recorded sign-in time (``None``: no time recorded).
    """
    from django.utils import timezone

    from workspaces.web_session import SESSION_AUTHENTICATED_AT

    def make(user: User, *, authenticated_seconds_ago: float | None = 0) -> APIClient:
        client = APIClient(enforce_csrf_checks=True)
        client.force_login(user)
        session = client.session
        if authenticated_seconds_ago is not None:
            session[SESSION_AUTHENTICATED_AT] = (
                timezone.now().timestamp() - authenticated_seconds_ago
            )
        session.save()
        return client

    return make


@pytest.fixture
def csrf_headers() -> Callable[[Any], dict[str, str]]:
    """Give a test client a CSRF cookie and return the matching ``X-CSRFToken`` header."""
    from django.conf import settings
    from django.middleware.csrf import CSRF_ALLOWED_CHARS, CSRF_SECRET_LENGTH
    from django.utils.crypto import get_random_string

    def make(client: Any) -> dict[str, str]:
        secret = get_random_string(CSRF_SECRET_LENGTH, allowed_chars=CSRF_ALLOWED_CHARS)
        client.cookies[settings.CSRF_COOKIE_NAME] = secret
        return {"HTTP_X_CSRFTOKEN": secret}

    return make


# --- Publishing: providers on 127.0.0.1, media in a temporary folder, delivery without a broker


@pytest.fixture
def provider_settings(settings: Any) -> Any:
    """Adapters may talk to the stand-in providers on 127.0.0.1, with short timeouts."""
    settings.HERALD_ALLOW_PRIVATE_PROVIDER_URLS = True
    settings.HERALD_PROVIDER_TIMEOUT_SECONDS = 2.0
    settings.HERALD_DISABLED_PROVIDERS = []
    return settings


@pytest.fixture
def media_storage(settings: Any, tmp_path: Any) -> Any:
    """Uploaded media go to a temporary folder (through the configured storage backend)."""
    from tests.publishing_support import use_media_root

    return use_media_root(settings, tmp_path / "media")


class DeliveryQueue:
    """Stands in for the broker: records what the services enqueue; ``run()`` delivers it by
    calling the delivery services directly, in this process (no Celery worker)."""

    def __init__(self) -> None:
        self.sends: list[str] = []
        self.reconciles: list[str] = []
        self.countdowns: dict[str, float] = {}

    def clear(self) -> None:
        self.sends.clear()
        self.reconciles.clear()

    def run(self, *, rounds: int = 5) -> None:
        from publishing.services import delivery

        for _ in range(rounds):
            if not self.sends and not self.reconciles:
                return
            sends, reconciles = list(self.sends), list(self.reconciles)
            self.clear()
            for destination_id in sends:
                delivery.delivery_send(destination_id=destination_id)
            for destination_id in reconciles:
                delivery.delivery_reconcile(destination_id=destination_id)


@pytest.fixture
def delivery_queue(monkeypatch: Any) -> DeliveryQueue:
    from publishing import tasks

    queue = DeliveryQueue()

    def send_apply_async(
        args: Any = (), kwargs: Any = None, countdown: float | None = None, **_: Any
    ) -> None:
        destination_id = str((args or [None])[0] or (kwargs or {}).get("destination_id"))
        queue.sends.append(destination_id)
        if countdown is not None:
            queue.countdowns[destination_id] = countdown

    monkeypatch.setattr(
        tasks.delivery_send, "delay", lambda destination_id: queue.sends.append(str(destination_id))
    )
    monkeypatch.setattr(tasks.delivery_send, "apply_async", send_apply_async)
    monkeypatch.setattr(
        tasks.delivery_reconcile,
        "delay",
        lambda destination_id: queue.reconciles.append(str(destination_id)),
    )
    return queue
