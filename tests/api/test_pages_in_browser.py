"""The pages a person meets, in a real browser (headless Chromium, tests/browser.py) at 1280 and
390 px wide: each answers with the expected status, loads its style sheets, and fits the width
(no horizontal scrolling). Screenshots go to a temporary folder (printed with ``-s``), or to
``HERALD_SCREENSHOT_DIR`` when set.

Skipped where Chromium is not installed (.ci/run installs Debian's ``chromium``).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from django.test import Client

pytest.importorskip(
    "websocket", reason="websocket-client is not installed (pip install -e '.[dev]')"
)

from tests.browser import Chromium, PageFacts, chromium_path
from workspaces.access import Actor
from workspaces.models import User

CHROMIUM = chromium_path()

pytestmark = [
    pytest.mark.slow,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(
        CHROMIUM is None, reason="Chromium is not installed (apt-get install chromium)"
    ),
]

WIDTHS = (1280, 390)
PASSWORD = "correct horse battery"


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Chromium]:
    assert CHROMIUM is not None
    with Chromium(CHROMIUM, tmp_path_factory.mktemp("chromium-profile")) as chromium:
        yield chromium


@pytest.fixture(scope="module")
def screenshot_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = Path(os.environ.get("HERALD_SCREENSHOT_DIR") or tmp_path_factory.mktemp("screenshots"))
    folder.mkdir(parents=True, exist_ok=True)
    print(f"screenshots: {folder}")
    return folder


@pytest.fixture(autouse=True)
def _crashing_pages(settings: Any, browser: Chromium) -> None:
    """The real URLs plus a page that crashes and one that refuses (tests/crash_urls.py); a
    fresh browser state for each test."""
    settings.ROOT_URLCONF = "tests.crash_urls"
    settings.DEBUG = False
    browser.send("Network.clearBrowserCookies")


@pytest.fixture
def base(live_server: Any) -> str:
    return str(live_server.url)


@pytest.fixture
def sign_in(browser: Chromium, base: str) -> Callable[[User], None]:
    """Give the browser a session of ``user`` (as signing in on /login/ would)."""

    def sign(user: User) -> None:
        client = Client()
        client.force_login(user)
        browser.set_cookie(base, "sessionid", client.cookies["sessionid"].value)

    return sign


def check(facts: PageFacts, status: int) -> None:
    where = f"{facts.url} at {facts.client_width}px"
    assert facts.status == status, f"{where}: HTTP {facts.status}"
    assert "Herald" in facts.title, f"{where}: title {facts.title!r}"
    assert not facts.csp_violations, f"{where}: CSP violations {facts.csp_violations}"
    assert any(sheet["rules"] > 0 for sheet in facts.sheets), f"{where}: unstyled"
    missing = [link["href"] for link in facts.links if link["rules"] <= 0]
    assert not missing, f"{where}: style sheets not loaded: {missing}"
    assert facts.scroll_width <= facts.client_width, (
        f"{where}: scrolls horizontally ({facts.scroll_width}px wide; too wide: {facts.wide})"
    )


def visit(
    browser: Chromium,
    shots: Path,
    name: str,
    url: str,
    status: int,
    action: Callable[[], int | None] | None = None,
    ready: str | None = None,
) -> list[PageFacts]:
    """Load ``url`` at each width (then run ``action``, which leads to the page under test and
    returns its status; then wait until the JavaScript ``ready`` is true), check it, and
    screenshot it as ``<name>-<width>.png``."""
    seen = []
    for width in WIDTHS:
        browser.set_width(width)
        answer = browser.navigate(url)
        if action is not None:
            answer = action()
        if ready is not None:
            browser.wait_until(ready)
        facts = browser.facts(url, answer, shots / f"{name}-{width}.png")
        check(facts, status)
        seen.append(facts)
    return seen


def test_sign_in_and_error_pages(browser: Chromium, screenshot_dir: Path, base: str) -> None:
    visit(browser, screenshot_dir, "login", f"{base}/login/", 200)
    visit(browser, screenshot_dir, "404", f"{base}/no-such-page/", 404)
    visit(browser, screenshot_dir, "403", f"{base}/test-forbidden-page/", 403)
    visit(browser, screenshot_dir, "500", f"{base}/test-crash-page/", 500)
    visit(browser, screenshot_dir, "password-reset", f"{base}/password-reset/", 200)

    def post_without_csrf_token() -> int | None:
        return browser.submit(
            "const f = document.querySelector('form');"
            "f.querySelector('[name=csrfmiddlewaretoken]').remove();"
            f"f.username.value = 'someone@example.com'; f.password.value = '{PASSWORD}';"
            "f.submit()"
        )

    pages = visit(browser, screenshot_dir, "csrf", f"{base}/login/", 403, post_without_csrf_token)
    assert pages[0].title.startswith("This form has expired")


def test_documentation_pages(browser: Chromium, screenshot_dir: Path, base: str) -> None:
    # Swagger UI renders the OpenAPI document once it has fetched it.
    operations = "document.querySelectorAll('.swagger-ui .opblock').length > 10"
    visit(browser, screenshot_dir, "docs", f"{base}/docs/", 200, ready=operations)
    visit(browser, screenshot_dir, "problems", f"{base}/docs/problems/", 200)
    visit(browser, screenshot_dir, "problem", f"{base}/docs/problems/not_found", 200)


def test_signed_in_pages(
    browser: Chromium,
    screenshot_dir: Path,
    base: str,
    sign_in: Callable[[User], None],
    user: User,
    workspace: Any,
) -> None:
    workspace.name = "A workspace with a rather long name for a narrow phone screen"
    workspace.save(update_fields=["name"])
    sign_in(user)

    def create_token() -> int | None:
        return browser.submit(
            "const f = document.getElementById('id_name').form;"
            "f.elements.name.value = 'continuous-integration-deploy-token-for-the-main-site';"
            "f.elements.can_write.checked = true; f.submit()"
        )

    visit(browser, screenshot_dir, "developer", f"{base}/settings/developer/", 200, create_token)
    secret = browser.evaluate("document.getElementById('created-token').textContent")
    assert re.fullmatch(r"hrld_\S{30,}", secret.strip())

    visit(browser, screenshot_dir, "logout", f"{base}/logout/", 200)
    assert browser.evaluate("document.querySelector('h2').textContent") == "Sign out"
    visit(browser, screenshot_dir, "settings", f"{base}/settings/", 200)
    visit(browser, screenshot_dir, "settings-password", f"{base}/settings/password/", 200)

    def submit_wrong_password() -> int | None:
        return browser.submit(
            "const f = document.querySelector('input[type=password]').form;"
            "for (const i of f.querySelectorAll('input[type=password]')) i.value = 'x';"
            "f.submit()"
        )

    visit(
        browser,
        screenshot_dir,
        "settings-password-errors",
        f"{base}/settings/password/",
        200,
        submit_wrong_password,
    )


def test_invitation_page(
    browser: Chromium, screenshot_dir: Path, base: str, user: User, workspace: Any
) -> None:
    from workspaces.services import invitation_create

    _, raw = invitation_create(
        actor=Actor(user=user),
        workspace_id=workspace.pk,
        email="a.new.colleague.with.a.long.address@example.com",
        role="editor",
    )
    visit(browser, screenshot_dir, "invitation", f"{base}/invitations/{raw}/", 200)


def test_admin_pages_run_their_scripts_under_the_policy(
    browser: Chromium,
    screenshot_dir: Path,
    base: str,
    sign_in: Callable[[User], None],
    make_user: Any,
) -> None:
    """The Django admin's own scripts (static files) still run: the sidebar, and the two-list
    selector SelectFilter2.js builds for a user's groups and permissions; no CSP violation."""
    admin = make_user("root@example.com", is_staff=True, is_superuser=True)
    pages = [
        ("admin-login", "/admin/login/", None),
        ("admin-index", "/admin/", None),
        ("admin-users", "/admin/workspaces/user/", "document.getElementById('changelist')"),
        (
            "admin-user",
            f"/admin/workspaces/user/{admin.pk}/change/",
            "document.querySelectorAll('.selector-available').length >= 2",
        ),
        ("admin-delivery", "/admin/publishing/schedulerheartbeat/", None),
    ]
    for name, path, ready in pages:
        if name == "admin-index":
            sign_in(admin)
        browser.set_width(1280)
        status = browser.navigate(f"{base}{path}")
        if ready is not None:
            browser.wait_until(ready)
        facts = browser.facts(f"{base}{path}", status, screenshot_dir / f"{name}-1280.png")
        assert facts.status == 200, (path, facts.status)
        assert not facts.csp_violations, (path, facts.csp_violations)
        missing = [link["href"] for link in facts.links if link["rules"] <= 0]
        assert not missing, (path, missing)
    # nav_sidebar.js wired the sidebar toggle (the last page has the sidebar).
    toggled = (
        "(() => { const main = document.getElementById('main');"
        " const before = main.classList.contains('shifted');"
        " document.getElementById('toggle-nav-sidebar').click();"
        " return main.classList.contains('shifted') !== before; })()"
    )
    assert browser.evaluate(toggled)
