"""The posting queue: a workspace's weekly time slots, in its own time zone, and queueing a
publication at the next free one (``POST /publications/{id}/queue``).

Slots are wall-clock times in the schedule's IANA time zone, so a 09:30 slot stays at 09:30
local time across a daylight-saving change (its UTC instant moves by the change). Two rules for
the days of a change (decision 0023):

* a slot whose local time does not exist (skipped by a spring-forward change, e.g. 02:30 in
  Europe/Paris on the last Sunday of March) falls at the instant the offset before the change
  gives it, which is the same distance after the change (02:30 → 03:30 local), as RFC 5545 does
  for calendar times;
* a slot whose local time happens twice (a fall-back change) is the first of the two
  (the earlier instant), once.

Two slots that fall at the same instant count once. A slot is free for an account when no
scheduled, publishing or published publication with a destination on that account is scheduled
at that instant. A publication is queued at the earliest instant that is a slot of, and free for,
every account of its destinations (slots without ``account_id`` serve every account).
"""

from __future__ import annotations

import re
import uuid
import zoneinfo
from collections.abc import Iterable, Iterator
from datetime import UTC, date, datetime, time, timedelta
from functools import cache
from typing import Any

from django.db import transaction
from django.utils import timezone

from config.errors import FieldValidationError, field_error
from config.types import ModelId
from publishing.errors import NoFreeSlotError
from publishing.models import Account, Destination, PostingSchedule, Publication
from publishing.services import publications
from workspaces.access import Actor, require_workspace_role
from workspaces.models import WorkspaceMembership

MAX_SLOTS = 100
HORIZON_DAYS = 56  # how far ahead the queue looks for a free slot (eight weeks)
NEXT_SLOTS_SHOWN = 3  # free slots per account in the schedule's answer
MAX_ACCOUNTS_SHOWN = 50
_TIME = re.compile(r"^([01]\d|2[0-3]):[0-5]\d$")
OCCUPYING = (
    Publication.Status.SCHEDULED,
    Publication.Status.PUBLISHING,
    Publication.Status.PUBLISHED,
)
EDITOR = WorkspaceMembership.Role.EDITOR


@cache
def _zone_names() -> frozenset[str]:
    return frozenset(zoneinfo.available_timezones())


def _schedule(workspace_id: uuid.UUID, *, lock: bool = False) -> PostingSchedule:
    if lock:
        PostingSchedule.objects.get_or_create(workspace_id=workspace_id)
        return PostingSchedule.objects.select_for_update().get(workspace_id=workspace_id)
    found = PostingSchedule.objects.filter(workspace_id=workspace_id).first()
    return found or PostingSchedule(workspace_id=workspace_id)


def _slot_errors(workspace_id: uuid.UUID, slots: list[dict[str, Any]]) -> list[dict[str, Any]]:
    errors: list[dict[str, Any]] = []
    wanted = {str(s["account_id"]) for s in slots if s.get("account_id") is not None}
    known = {
        str(pk)
        for pk in Account.objects.filter(
            workspace_id=workspace_id, pk__in=[publications._parse_uuid(a) for a in wanted]
        )
        .exclude(status=Account.Status.DISCONNECTED)
        .values_list("pk", flat=True)
    }
    seen: set[tuple[int, str, str | None]] = set()
    for i, slot in enumerate(slots):
        account_id = slot.get("account_id")
        if account_id is not None and publications._parse_uuid(account_id) is None:
            errors.append(field_error(f"body.slots[{i}].account_id", "Not an ID.", account_id))
        elif account_id is not None and str(publications._parse_uuid(account_id)) not in known:
            message = "No connected account with this ID in the workspace."
            errors.append(field_error(f"body.slots[{i}].account_id", message, account_id))
        key = (slot["weekday"], slot["time"], str(account_id) if account_id else None)
        if key in seen:
            errors.append(field_error(f"body.slots[{i}]", "The same slot is listed twice."))
        seen.add(key)
    return errors


def _validate(workspace_id: uuid.UUID, tz_name: str, slots: list[dict[str, Any]]) -> None:
    errors: list[dict[str, Any]] = []
    if tz_name not in _zone_names():
        message = "Not an IANA time zone name (for example Europe/Paris)."
        errors.append(field_error("body.timezone", message, tz_name[:64]))
    if len(slots) > MAX_SLOTS:
        errors.append(field_error("body.slots", f"At most {MAX_SLOTS} slots.", None))
    for i, slot in enumerate(slots[:MAX_SLOTS]):
        if not _TIME.match(str(slot.get("time", ""))):
            errors.append(field_error(f"body.slots[{i}].time", "Use HH:MM (24-hour).", None))
    if not errors:
        errors = _slot_errors(workspace_id, slots)
    if errors:
        raise FieldValidationError(errors)


def _normalized(slots: list[dict[str, Any]]) -> list[dict[str, Any]]:
    rows = [
        {
            "weekday": int(s["weekday"]),
            "time": s["time"],
            "account_id": str(publications._parse_uuid(s["account_id"]))
            if s.get("account_id") is not None
            else None,
        }
        for s in slots
    ]
    return sorted(rows, key=lambda s: (s["weekday"], s["time"], s["account_id"] or ""))


def _day_instants(
    zone: zoneinfo.ZoneInfo, day: date, slots: list[dict[str, Any]]
) -> list[datetime]:
    """The slots of ``day`` as UTC instants. ``fold=0``: a skipped local time takes the offset
    before the change (02:30 → 03:30), a repeated one its first occurrence."""
    instants = set()
    for slot in slots:
        if slot["weekday"] == day.weekday():
            hour, minute = (int(part) for part in slot["time"].split(":"))
            local = datetime.combine(day, time(hour, minute), tzinfo=zone)
            instants.add(local.astimezone(UTC))
    return sorted(instants)


def slot_instants(
    schedule: PostingSchedule, account_id: str, after: datetime, days: int = HORIZON_DAYS
) -> Iterator[datetime]:
    """The UTC instants of the slots serving ``account_id`` strictly after ``after``,
    ascending, each once, over ``days`` days (see the module's daylight-saving rules)."""
    zone = zoneinfo.ZoneInfo(schedule.timezone)
    mine = [s for s in schedule.slots if s.get("account_id") in (None, account_id)]
    if not mine:
        return
    start = after.astimezone(zone).date()
    last: datetime | None = None
    for offset in range(days + 1):
        for instant in _day_instants(zone, start + timedelta(days=offset), mine):
            if instant > after and (last is None or instant > last):
                last = instant
                yield instant


def _occupied(
    account_ids: Iterable[str], after: datetime, exclude: uuid.UUID | None = None
) -> set[tuple[str, datetime]]:
    """(account, instant) pairs taken by a scheduled, publishing or published publication."""
    rows = Destination.objects.filter(
        account_id__in=list(account_ids),
        publication__status__in=OCCUPYING,
        publication__scheduled_at__gt=after,
        publication__scheduled_at__lte=after + timedelta(days=HORIZON_DAYS + 1),
    )
    if exclude is not None:
        rows = rows.exclude(publication_id=exclude)
    pairs = rows.values_list("account_id", "publication__scheduled_at")
    return {(str(a), at) for a, at in pairs if at is not None}


def next_free(
    schedule: PostingSchedule,
    account_ids: list[str],
    after: datetime,
    *,
    exclude: uuid.UUID | None = None,
    count: int = 1,
) -> list[datetime]:
    """The first ``count`` instants that are a slot of, and free for, every account."""
    if not account_ids:
        return []
    taken = _occupied(account_ids, after, exclude)
    candidates = [set(slot_instants(schedule, a, after)) for a in account_ids]
    common = sorted(set.intersection(*candidates))
    free = [t for t in common if not any((a, t) in taken for a in account_ids)]
    return free[:count]


def schedule_document(schedule: PostingSchedule, *, now: datetime | None = None) -> dict[str, Any]:
    """The schedule as the API shows it, with the next free slots of each live account."""
    now = now or timezone.now()
    accounts = list(
        Account.objects.filter(workspace_id=schedule.workspace_id)
        .exclude(status=Account.Status.DISCONNECTED)
        .order_by("created_at", "pk")
        .values_list("pk", flat=True)[:MAX_ACCOUNTS_SHOWN]
    )
    next_slots = [
        {
            "account_id": str(pk),
            "next_free": next_free(schedule, [str(pk)], now, count=NEXT_SLOTS_SHOWN),
        }
        for pk in accounts
    ]
    return {
        "workspace_id": schedule.workspace_id,
        "timezone": schedule.timezone,
        "slots": schedule.slots,
        "next_slots": next_slots,
        "updated_at": schedule.updated_at,
    }


def posting_schedule_get(*, actor: Actor, workspace_id: ModelId) -> dict[str, Any]:
    pk = require_workspace_role(actor, workspace_id)
    return schedule_document(_schedule(pk))


@transaction.atomic
def posting_schedule_set(
    *, actor: Actor, workspace_id: ModelId, tz_name: str, slots: list[dict[str, Any]]
) -> dict[str, Any]:
    pk = require_workspace_role(actor, workspace_id, role=EDITOR)
    _validate(pk, tz_name, slots)
    schedule = _schedule(pk, lock=True)
    schedule.timezone = tz_name
    schedule.slots = _normalized(slots)
    schedule.save()
    return schedule_document(schedule)


def publication_queue(
    *, actor: Actor, publication_id: ModelId, expected_revision: int | None, intent: str
) -> Publication:
    """Schedule the publication at the earliest slot free for all its destinations' accounts,
    through ``publication_schedule`` (same checks: revision, state, media, readiness).
    The schedule row is locked meanwhile, so two queue requests never take the same slot."""
    pk = publications.publication_require_access(actor, publication_id)
    with transaction.atomic():
        workspace_id = Publication.objects.values_list("workspace_id", flat=True).get(pk=pk)
        schedule = _schedule(workspace_id, lock=True)
        publications._check_revision(Publication.objects.get(pk=pk), expected_revision)
        account_ids = sorted(
            {
                str(a)
                for a in Destination.objects.filter(publication_id=pk).values_list(
                    "account_id", flat=True
                )
            }
        )
        found = next_free(schedule, account_ids, timezone.now(), exclude=pk)
        if not found:
            raise NoFreeSlotError(
                f"No slot free for all {len(account_ids)} accounts of the publication in the "
                f"next {HORIZON_DAYS} days."
            )
        return publications.publication_schedule(
            actor=actor,
            publication_id=pk,
            scheduled_at=found[0],
            expected_revision=expected_revision,
            intent=intent,
        )
