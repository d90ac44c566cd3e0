"""Limits are shared by every process on the embedded default (no Redis).

A real gunicorn with two workers (as ``make run`` starts it) on a SQLite file database, without
``REDIS_URL``: every request arrives on a new connection, so the kernel spreads them over both
workers. Before the SQLite limits store each worker kept its own counters in ``LocMemCache``:
the 429 for bad tokens came at the 54th failure instead of the 31st and ``HERALD_API_RATE=5/min``
admitted 10.
"""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
import requests
from django.conf import settings as django_settings

from tests.worker_harness import BIN, ManagedProcess, free_port, wait_until

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True), pytest.mark.timeout(180)]

_INHERITED_PREFIXES = ("HERALD_", "DATABASE_URL", "REDIS_URL", "SECRET_KEY", "DJANGO_")
UNKNOWN_TOKEN = "Bearer hrld_00000000_" + "A" * 43


@pytest.fixture
def web(worker_database_url: str, tmp_path: Path) -> Iterator[tuple[str, ManagedProcess, Path]]:
    data_dir = tmp_path / "data"
    env = {k: v for k, v in os.environ.items() if not k.startswith(_INHERITED_PREFIXES)}
    env.update(
        DJANGO_SETTINGS_MODULE="config.settings",
        PYTHONUNBUFFERED="1",
        DATABASE_URL=worker_database_url,
        HERALD_DATA_DIR=str(data_dir),
        HERALD_ENVIRONMENT="local",
        SECRET_KEY=django_settings.SECRET_KEY,
        HERALD_API_RATE="5/min",
    )
    port = free_port()
    argv = [
        str(BIN / "gunicorn"),
        "config.wsgi:application",
        "--bind",
        f"127.0.0.1:{port}",
        "--workers",
        "2",
        "--threads",
        "4",
        "--graceful-timeout",
        "2",
    ]
    process = ManagedProcess("web", argv, env, tmp_path / "web.log").start()
    base = f"http://127.0.0.1:{port}"

    def answers() -> bool:
        try:
            return requests.get(f"{base}/api/v1/health", timeout=2).status_code == 200
        except requests.RequestException:
            return False

    try:
        wait_until(lambda: answers() or not process.alive, timeout=60, what="gunicorn to answer")
        assert process.alive, process.log()
        yield base, process, data_dir
    finally:
        process.stop(timeout=5)


def fresh(base: str, authorization: str) -> int:
    """One request on a new connection (no session: nothing is reused)."""
    response = requests.get(
        f"{base}/api/v1/me",
        headers={"Authorization": authorization, "Connection": "close"},
        timeout=10,
    )
    return response.status_code


def workers_with_the_store_open(master: int, store: Path) -> set[str]:
    """The gunicorn workers that hold the limits file open now (each opens it when it counts a
    request)."""
    children = Path(f"/proc/{master}/task/{master}/children").read_text().split()
    holding = set()
    for pid in children:
        try:
            targets = {os.readlink(fd) for fd in Path(f"/proc/{pid}/fd").iterdir()}
        except (FileNotFoundError, PermissionError, ProcessLookupError):
            continue
        if str(store) in targets:
            holding.add(pid)
    return holding


def test_two_workers_share_the_failure_budget_and_the_api_rate(
    web: tuple[str, ManagedProcess, Path], user: Any, make_token: Any
) -> None:
    base, process, data_dir = web
    store = data_dir / "limits.sqlite3"
    assert process.process is not None
    # Both workers count requests in the one store file: another user's requests (their own rate,
    # no failed authentication) until each worker has opened it. Which worker accepts a new
    # connection is the kernel's choice: one after another, every one may land on the same
    # worker, so they go in concurrent rounds, which keep one worker busy while the other accepts.
    other = make_token(
        type(user).objects.create_user("other@example.com", "correct horse battery"),
        permissions=("api:read",),
    )
    counted_in_the_store: set[str] = set()
    with ThreadPoolExecutor(max_workers=12) as pool:
        for _ in range(20):
            list(pool.map(lambda _: fresh(base, f"Bearer {other}"), range(24)))
            counted_in_the_store |= workers_with_the_store_open(process.process.pid, store)
            if len(counted_in_the_store) == 2:
                break
    assert len(counted_in_the_store) == 2, process.log()

    token = make_token(user, permissions=("api:read",))
    assert [fresh(base, f"Bearer {token}") for _ in range(7)] == [200] * 5 + [429] * 2

    # The budget is per clock minute: start with room for the 31 requests before it ends.
    if time.time() % 60 > 40:
        time.sleep(61 - time.time() % 60)
    answers = [fresh(base, UNKNOWN_TOKEN) for _ in range(31)]
    assert answers == [401] * 30 + [429], answers
    # The address is over its budget of bad tokens, and a valid token still authenticates.
    third = make_token(
        type(user).objects.create_user("third@example.com", "correct horse battery"),
        permissions=("api:read",),
    )
    assert [fresh(base, f"Bearer {third}"), fresh(base, UNKNOWN_TOKEN)] == [200, 429]

    assert stat.S_IMODE(store.stat().st_mode) == 0o600
