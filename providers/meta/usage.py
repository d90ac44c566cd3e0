"""Meta's rate-limit usage headers, and the pauses Herald takes before a limit is reached.

Graph API answers carry how much of a limit is used, in percent
(developers.facebook.com/docs/graph-api/overview/rate-limiting):

* ``X-App-Usage`` (platform limit of the app, a rolling hour) and ``X-Page-Usage`` (a Page,
  called with a user token): ``{"call_count": 28, "total_time": 25, "total_cputime": 25}``;
* ``X-Business-Use-Case-Usage`` (business use case limits: calls with a Page token, the
  Instagram API), one entry per business object:
  ``{"<object id>": [{"type": "pages", "call_count": 91, "total_cputime": 10,
  "total_time": 12, "estimated_time_to_regain_access": 7}]}`` (that time in minutes).

Once any percentage reaches the pause threshold (``HERALD_META_USAGE_PAUSE_PERCENT``, 90 by
default), Herald stops calling for that app or business object: for
``estimated_time_to_regain_access`` when Meta gave one, else :data:`DEFAULT_PAUSE_SECONDS`.
The pause is a mark in the shared limits store (``config.limits``), so every worker process
honours it; the next call after it re-reads the headers and pauses again while usage is still
high. A call that is refused with a rate-limit code (4, 17, 32, 613, the 80000s) pauses the
same way.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from config import limits

DEFAULT_PAUSE_PERCENT = 90.0
DEFAULT_PAUSE_SECONDS = 300.0  # no regain time given: check again after five minutes
MAX_PAUSE_SECONDS = 24 * 3600.0  # business use case windows are at most a day
_PERCENT_KEYS = ("call_count", "total_time", "total_cputime")
APP = "app"


@dataclass(frozen=True)
class Usage:
    """One usage reading: the app's (``object_id`` empty) or a business object's."""

    header: str  # the header it came from, lower case
    object_id: str  # "" for the app itself (X-App-Usage)
    kind: str  # the business use case type ("pages", "instagram", ...), or "app" / "page"
    percent: float  # the highest of call_count, total_time and total_cputime
    regain_seconds: float  # estimated_time_to_regain_access in seconds; 0 when not given

    def pause_seconds(self, threshold: float) -> float:
        """How long to stop calling after this reading (0: no pause)."""
        if self.regain_seconds > 0:
            return min(self.regain_seconds, MAX_PAUSE_SECONDS)
        if self.percent >= threshold:
            return DEFAULT_PAUSE_SECONDS
        return 0.0

    def describe(self) -> str:
        what = "the app" if not self.object_id else f"{self.kind or 'object'} {self.object_id}"
        return f"{what} at {self.percent:g}% of its Meta rate limit"


def _number(value: Any) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return 0.0
    return number if number == number and number >= 0 else 0.0  # NaN, negatives -> 0


def _reading(header: str, object_id: str, kind: str, entry: Mapping[str, Any]) -> Usage:
    percent = max((_number(entry.get(key)) for key in _PERCENT_KEYS), default=0.0)
    regain = _number(entry.get("estimated_time_to_regain_access")) * 60.0
    return Usage(header, object_id, kind, percent, regain)


def _json(value: str) -> Any:
    try:
        return json.loads(value)
    except ValueError:
        return None


def read_usage(headers: Mapping[str, str], *, page_id: str = "") -> list[Usage]:
    """Every reading in ``headers`` (unreadable headers are passed over). ``page_id``: the
    object an ``X-Page-Usage`` header is about (the Page the call was for)."""
    lowered = {str(k).lower(): str(v) for k, v in headers.items()}
    found: list[Usage] = []
    app = _json(lowered.get("x-app-usage", ""))
    if isinstance(app, dict):
        found.append(_reading("x-app-usage", "", APP, app))
    page = _json(lowered.get("x-page-usage", ""))
    if isinstance(page, dict) and page_id:
        found.append(_reading("x-page-usage", page_id, "page", page))
    business = _json(lowered.get("x-business-use-case-usage", ""))
    if isinstance(business, dict):
        for object_id, entries in business.items():
            for entry in entries if isinstance(entries, list) else [entries]:
                if isinstance(entry, dict):
                    kind = str(entry.get("type") or "")
                    found.append(_reading("x-business-use-case-usage", str(object_id), kind, entry))
    return found


# --- pauses in the shared limits store ------------------------------------------------------


def _key(app_id: str, object_id: str) -> str:
    return f"meta:pause:{app_id or '-'}:{object_id or APP}"


def pause(app_id: str, object_id: str, seconds: float) -> None:
    """Stop calling for ``object_id`` ("" for the whole app) for ``seconds``."""
    if seconds > 0:
        limits.set_mark(_key(app_id, object_id), time.time() + min(seconds, MAX_PAUSE_SECONDS))


def record(usages: Iterable[Usage], *, app_id: str, threshold: float) -> list[Usage]:
    """Pause for every reading at or over ``threshold``; the readings that paused."""
    paused = []
    for usage in usages:
        seconds = usage.pause_seconds(threshold)
        if seconds > 0:
            pause(app_id, usage.object_id, seconds)
            paused.append(usage)
    return paused


def paused_for(app_id: str, object_ids: Iterable[str]) -> tuple[float, str]:
    """Seconds left of the longest pause of the app or one of ``object_ids`` (0 when none),
    and what is paused ("" for the app, else the object id)."""
    now = time.time()
    longest, what = 0.0, ""
    for object_id in ("", *[o for o in object_ids if o]):
        left = limits.read_mark(_key(app_id, object_id)) - now
        if left > longest:
            longest, what = left, object_id
    return max(0.0, round(longest, 3)), what
