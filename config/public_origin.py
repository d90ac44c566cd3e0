"""The last result of the hourly check that this server's media are reachable through its
public origin (``HERALD_PUBLIC_URL``), kept in the shared limits store so that every web process
reports it at ``/api/v1/ready`` (``public_origin``): ``ok``, ``unreachable`` or ``unchecked``
(no result yet, or none for two hours). It never makes ``/ready`` fail: a server whose media
networks cannot fetch still serves everything else. The check itself is publishing's
(``publishing.services.public_origin``)."""

from __future__ import annotations

import time

from django.conf import settings

from config import limits

OK = "public_origin:ok"
UNREACHABLE = "public_origin:unreachable"
# A result counts for two hourly checks (and some slack); after that the state is unchecked.
VALID_SECONDS = 2 * 3600 + 600


def record(reachable: bool) -> None:
    limits.set_mark(OK if reachable else UNREACHABLE, time.time() + VALID_SECONDS)


def state() -> str | None:
    """None without ``HERALD_PUBLIC_URL`` (nothing to check); else the latest result. Each
    result sets its mark to end later than any before it, so the later end is the latest."""
    if not settings.HERALD_PUBLIC_URL:
        return None
    ok, unreachable = limits.read_mark(OK), limits.read_mark(UNREACHABLE)
    if not ok and not unreachable:
        return "unchecked"
    return "ok" if ok >= unreachable else "unreachable"
