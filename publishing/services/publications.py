"""Publications: create, replace, schedule, publish now, cancel, retry failed, delete.

Queue actions only write rows; the worker delivers. A successful queue response never claims
delivery: each destination's status says what shipped.
"""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta
from functools import partial
from typing import Any, Protocol

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.db import transaction
from django.utils import timezone

from config.errors import FieldValidationError, NotFoundError, RevisionConflictError
from config.types import ModelId
from providers import get_adapter
from providers.base import OutputProfile
from publishing import tasks
from publishing.errors import (
    MediaProcessingError,
    PublicationStateError,
    ReadinessBlockedError,
)
from publishing.models import Account, Destination, Media, Publication, PublicationEvent
from publishing.services import video_rules
from readiness import services as readiness
from workspaces.access import Actor, parse_id, require_workspace, require_workspace_role
from workspaces.models import WorkspaceMembership
from workspaces.services import usage_consume

S = Destination.Status
P = Publication.Status
MAX_DESTINATIONS = 50
UNCHANGED: Any = object()  # publication_replace: keep the current voice override


class VoiceOverrideSetter(Protocol):
    def __call__(self, *, publication: Publication, voice_profile_id: ModelId | None) -> None: ...


_voice_override_setter: VoiceOverrideSetter | None = None


def register_voice_override_setter(setter: VoiceOverrideSetter) -> None:
    """A publication's voice override lives in the voice app, which depends on publishing: it
    registers its setter here (``VoiceConfig.ready``), so publishing never imports voice. The
    setter runs inside the publishing service's transaction, after its access checks."""
    global _voice_override_setter  # set once, at start-up
    _voice_override_setter = setter


def _voice_override_set(publication: Publication, voice_profile_id: ModelId | None) -> None:
    if _voice_override_setter is None:
        raise ImproperlyConfigured("No voice override setter: the voice app is not installed.")
    _voice_override_setter(publication=publication, voice_profile_id=voice_profile_id)


def event_record(
    *,
    publication_id: ModelId,
    kind: str,
    destination: Destination | None = None,
    status: str = "",
    detail: str = "",
    data: dict[str, Any] | None = None,
    destination_id: ModelId | None = None,
) -> None:
    PublicationEvent.objects.create(
        publication_id=publication_id,
        destination_id=destination.pk if destination is not None else destination_id,
        kind=kind,
        status=status,
        detail=detail[:500],
        data=data or {},
    )


# --- Validation against capability metadata -------------------------------------------------


def _default_profile(account: Account) -> OutputProfile:
    return get_adapter(account.provider).capabilities.profiles[0]


def _validate(
    *, workspace_id: ModelId, text: str, media_ids: list[str], destinations: list[dict[str, Any]]
) -> tuple[list[Account], dict[str, Media]]:
    """Every destination against its output profile; 422 locations name destination and field."""
    errors: list[dict[str, Any]] = []
    if not destinations:
        errors.append({"location": "body.destinations", "message": "At least one destination."})
    if len(destinations) > MAX_DESTINATIONS:
        errors.append({"location": "body.destinations", "message": f"At most {MAX_DESTINATIONS}."})
    account_ids: list[uuid.UUID] = []
    for index, item in enumerate(destinations):
        try:
            account_ids.append(uuid.UUID(str(item["account_id"])))
        except (KeyError, ValueError):
            errors.append(
                {
                    "location": f"body.destinations[{index}].account_id",
                    "message": "Unknown account.",
                }
            )
    if len(set(account_ids)) != len(account_ids):
        errors.append({"location": "body.destinations", "message": "Each account may appear once."})
    all_media_ids = set(media_ids)
    for item in destinations:
        all_media_ids.update(item.get("media_ids") or [])
    media = {
        str(m.pk): m
        for m in Media.objects.filter(workspace_id=workspace_id, pk__in=_uuids(all_media_ids))
    }
    for index, media_id in enumerate(media_ids):
        if media_id not in media:
            errors.append(
                {
                    "location": f"body.media_ids[{index}]",
                    "message": "No such media in this workspace.",
                    "value": media_id,
                }
            )
    accounts = {a.pk: a for a in Account.objects.filter(pk__in=account_ids)}
    resolved: list[Account] = []
    for index, item in enumerate(destinations):
        prefix = f"body.destinations[{index}]"
        try:
            account = accounts.get(uuid.UUID(str(item.get("account_id"))))
        except ValueError:
            continue
        if account is None or account.status == Account.Status.DISCONNECTED:
            raise NotFoundError(f"No connected account with ID {item.get('account_id')}.")
        if str(account.workspace_id) != str(workspace_id):
            from config.errors import PermissionDeniedError

            raise PermissionDeniedError(
                "A destination account belongs to another workspace.",
                code="account_not_in_workspace",
            )
        resolved.append(account)
        caps = get_adapter(account.provider).capabilities
        profile_key = item.get("profile") or _default_profile(account).key
        profile = caps.profile(profile_key)
        if profile is None:
            errors.append(
                {
                    "location": f"{prefix}.profile",
                    "message": f"{account.provider} has no format {profile_key}.",
                    "value": profile_key,
                }
            )
            continue
        item["profile"] = profile.key
        effective_text = item["text"] if item.get("text") is not None else text
        effective_media = item["media_ids"] if item.get("media_ids") is not None else media_ids
        text_location = f"{prefix}.text" if item.get("text") is not None else "body.text"
        length = profile.text_counter(effective_text)
        if length > profile.text_limit:
            errors.append(
                {
                    "location": text_location,
                    "message": f"{profile.key} allows {profile.text_limit} {profile.counting_rule}; this text has {length}.",
                }
            )
        if profile.text_required and not effective_text.strip():
            errors.append({"location": text_location, "message": f"{profile.key} needs text."})
        if not effective_text.strip() and not effective_media:
            errors.append({"location": text_location, "message": "Send text, media or both."})
        media_location = (
            f"{prefix}.media_ids" if item.get("media_ids") is not None else "body.media_ids"
        )
        if len(effective_media) > profile.media.max_count:
            errors.append(
                {
                    "location": media_location,
                    "message": f"{profile.key} allows {profile.media.max_count} media items.",
                }
            )
        if profile.media.required and not effective_media:
            errors.append(
                {"location": media_location, "message": f"{profile.key} needs a media item."}
            )
        present: list[tuple[str, Media]] = []
        for m_index, media_id in enumerate(effective_media):
            item_media = media.get(media_id)
            if item_media is None:
                if item.get("media_ids") is not None:
                    errors.append(
                        {
                            "location": f"{media_location}[{m_index}]",
                            "message": "No such media in this workspace.",
                            "value": media_id,
                        }
                    )
                continue
            present.append((f"{media_location}[{m_index}]", item_media))
            if video_rules.is_video(item_media) and (
                profile.video is None or not profile.video.delivers
            ):
                continue  # "video is not supported yet", below
            if item_media.mime_type not in profile.media.mime_types:
                errors.append(
                    {
                        "location": f"{media_location}[{m_index}]",
                        "message": f"{profile.key} does not take {item_media.mime_type}.",
                    }
                )
            elif item_media.size_bytes > profile.media.max_bytes:
                errors.append(
                    {
                        "location": f"{media_location}[{m_index}]",
                        "message": f"{profile.key} takes at most {profile.media.max_bytes} bytes per item.",
                    }
                )
        errors.extend(video_rules.destination_video_errors(profile, present))
        options = dict(item.get("options") or {})
        known = {o.name for o in profile.options}
        for name in sorted(set(options) - known):
            errors.append(
                {
                    "location": f"{prefix}.options.{name}",
                    "message": "Unknown option for this format.",
                }
            )
        for spec in profile.options:
            value = options.get(spec.name, spec.default)
            if value in (None, ""):
                if spec.required:
                    errors.append(
                        {
                            "location": f"{prefix}.options.{spec.name}",
                            "message": "This option is required.",
                        }
                    )
                continue
            value = str(value)
            if spec.choices and value not in spec.choices:
                errors.append(
                    {
                        "location": f"{prefix}.options.{spec.name}",
                        "message": f"One of: {', '.join(spec.choices)}.",
                        "value": value,
                    }
                )
            if len(value) > spec.max_length:
                errors.append(
                    {
                        "location": f"{prefix}.options.{spec.name}",
                        "message": f"At most {spec.max_length} characters.",
                    }
                )
            options[spec.name] = value
        item["options"] = options
    if errors:
        raise FieldValidationError(errors)
    return resolved, media


def _uuids(values: set[str]) -> list[uuid.UUID]:
    out = []
    for value in values:
        try:
            out.append(uuid.UUID(str(value)))
        except ValueError:
            continue
    return out


# --- Create and replace ---------------------------------------------------------------------


def _write_destinations(
    publication: Publication, accounts: list[Account], destinations: list[dict[str, Any]]
) -> None:
    for position, (account, item) in enumerate(zip(accounts, destinations, strict=True)):
        Destination.objects.create(
            publication=publication,
            account=account,
            position=position,
            profile=item["profile"],
            text=item.get("text"),
            media_ids=item.get("media_ids"),
            options=item.get("options") or {},
            idempotency_key=uuid.uuid4().hex,
        )


@transaction.atomic
def publication_create(
    *,
    actor: Actor,
    workspace_id: ModelId,
    text: str = "",
    media_ids: list[str] | None = None,
    destinations: list[dict[str, Any]],
    voice_profile_id: ModelId | None = None,
) -> Publication:
    access = require_workspace(actor, workspace_id, role=WorkspaceMembership.Role.EDITOR)
    media_ids = [str(m) for m in (media_ids or [])]
    accounts, _ = _validate(
        workspace_id=access.workspace.pk, text=text, media_ids=media_ids, destinations=destinations
    )
    publication = Publication.objects.create(
        workspace=access.workspace,
        created_by=actor.user,
        text=text,
        media_ids=media_ids,
    )
    if voice_profile_id is not None:  # the override lives in the voice app (404 if unknown)
        _voice_override_set(publication, voice_profile_id)
    _write_destinations(publication, accounts, destinations)
    event_record(publication_id=publication.pk, kind="publication.created", status=P.DRAFT)
    return publication


def publication_require_access(
    actor: Actor,
    publication_id: ModelId,
    *,
    role: WorkspaceMembership.Role = WorkspaceMembership.Role.EDITOR,
) -> uuid.UUID:
    """The access check of every change to a publication (404 unknown, 403 no access or role
    too low): also what an idempotent replay of such a change must pass. Returns its ID."""
    pk = parse_id(publication_id, what="publication")
    workspace_id = Publication.objects.filter(pk=pk).values_list("workspace_id", flat=True).first()
    if workspace_id is None:
        raise NotFoundError(f"No publication with ID {pk}.")
    require_workspace_role(actor, workspace_id, role=role)
    return pk


def _lock(
    actor: Actor,
    publication_id: ModelId,
    *,
    role: WorkspaceMembership.Role = WorkspaceMembership.Role.EDITOR,
) -> Publication:
    pk = publication_require_access(actor, publication_id, role=role)
    return Publication.objects.select_for_update().get(pk=pk)


def _check_revision(publication: Publication, expected_revision: int | None) -> None:
    if expected_revision is not None and expected_revision != publication.revision:
        raise RevisionConflictError(
            f"The publication is at revision {publication.revision}, not {expected_revision}; reload it.",
        )


@transaction.atomic
def publication_replace(
    *,
    actor: Actor,
    publication_id: ModelId,
    expected_revision: int,
    text: str = "",
    media_ids: list[str] | None = None,
    destinations: list[dict[str, Any]],
    voice_profile_id: ModelId = UNCHANGED,
) -> Publication:
    publication = _lock(actor, publication_id)
    _check_revision(publication, expected_revision)
    if publication.status not in (P.DRAFT, P.SCHEDULED):
        raise PublicationStateError(f"A {publication.status} publication cannot be edited.")
    # Queued certification-test work runs under its intent: only an administrator may change it.
    readiness.require_intent_allowed(user=actor.user, intent=publication.execution_intent)
    if voice_profile_id is not UNCHANGED:  # None clears the override
        _voice_override_set(publication, voice_profile_id)
    media_ids = [str(m) for m in (media_ids or [])]
    accounts, _ = _validate(
        workspace_id=publication.workspace_id,
        text=text,
        media_ids=media_ids,
        destinations=destinations,
    )
    publication.text = text
    publication.media_ids = media_ids
    publication.revision += 1
    publication.save(update_fields=["text", "media_ids", "revision", "updated_at"])
    publication.destinations.all().delete()
    _write_destinations(publication, accounts, destinations)
    if publication.status == P.SCHEDULED:  # keep the schedule; new rows wait like the old ones
        due = publication.scheduled_at
        publication.destinations.update(
            status=S.SCHEDULED,
            due_at=due,
            next_attempt_at=due,
            deadline_at=_deadline(due) if due else None,
        )
    event_record(
        publication_id=publication.pk,
        kind="publication.replaced",
        status=publication.status,
        data={"revision": publication.revision},
    )
    return publication


@transaction.atomic
def publication_delete(*, actor: Actor, publication_id: ModelId) -> None:
    """Editors delete drafts and publications that never published; once a destination has
    published, deleting the record of it is admin-only (README "Roles")."""
    publication = _lock(actor, publication_id)
    if publication.destinations.filter(status=S.PUBLISHED).exists():
        require_workspace_role(
            actor,
            publication.workspace_id,
            role=WorkspaceMembership.Role.ADMIN,
            operation="Deleting a publication that has published destinations",
        )
    if publication.destinations.filter(
        status__in=[S.QUEUED, S.SENDING, S.RETRY_WAIT, S.AMBIGUOUS]
    ).exists():
        raise PublicationStateError("Delivery is in progress; cancel or wait for it to settle.")
    publication.delete()


# --- Queue actions --------------------------------------------------------------------------


def _require_ready(
    publication: Publication, operation: str, destinations: Any = None, intent: str | None = None
) -> None:
    rows = list(
        (destinations if destinations is not None else publication.destinations).select_related(
            "account"
        )
    )
    decisions = readiness.decide_many(
        [  # one readiness pass for every destination (constant queries)
            readiness.DecisionRequest(
                provider=d.account.provider,
                operation=operation,
                output_profile=d.profile,
                account=d.account,
                intent=intent or publication.execution_intent,
            )
            for d in rows
        ]
    )
    blocked = []
    for destination, decision in zip(rows, decisions, strict=True):
        if not decision.executable:
            blocked.append(
                {
                    "destination_id": str(destination.pk),
                    "account_id": str(destination.account_id),
                    **decision.as_dict(),
                }
            )
    if blocked:
        raise ReadinessBlockedError(
            "Provider readiness blocks "
            + ", ".join(f"{b['account_id']} ({b['state']})" for b in blocked),
            destinations=blocked,
        )


def _require_media_ready(publication: Publication) -> None:
    """Every video a destination sends is probed and within its network's rules: a ``failed``
    one or a broken rule is a 422 at the destination's ``media_ids[j]``; one still
    ``processing`` is a 409 (``media_processing``): the caller tries again once it is ready."""
    rows = list(publication.destinations.select_related("account").order_by("position"))
    wanted = set(publication.media_ids or [])
    for d in rows:
        wanted.update(d.media_ids or [])
    media = {
        str(m.pk): m
        for m in Media.objects.filter(workspace_id=publication.workspace_id, pk__in=_uuids(wanted))
    }
    errors: list[dict[str, Any]] = []
    processing: list[str] = []
    for d in rows:
        own = d.media_ids is not None
        ids: list[str] = (d.media_ids if own else publication.media_ids) or []
        base = f"destinations[{d.position}].media_ids" if own else "media_ids"
        items = [(f"{base}[{j}]", media[i]) for j, i in enumerate(ids) if i in media]
        processing.extend(
            str(m.pk) for _, m in items if m.status == Media.Status.PROCESSING and m.pk
        )
        caps = get_adapter(d.account.provider).capabilities
        profile = caps.profile(d.profile) or _default_profile(d.account)
        errors.extend(video_rules.destination_video_errors(profile, items))
    if errors:
        raise FieldValidationError(errors)
    if processing:
        raise MediaProcessingError(
            "Media still processing: "
            + ", ".join(sorted(set(processing)))
            + ". Wait until its status is ready, then schedule again."
        )


def _deadline(due: datetime) -> datetime:
    return due + timedelta(seconds=settings.HERALD_DELIVERY_DEADLINE_SECONDS)


@transaction.atomic
def publication_schedule(
    *,
    actor: Actor,
    publication_id: ModelId,
    scheduled_at: datetime,
    expected_revision: int | None,
    intent: str = Publication.Intent.NORMAL,
) -> Publication:
    readiness.require_intent_allowed(user=actor.user, intent=intent)
    publication = _lock(actor, publication_id)
    _check_revision(publication, expected_revision)
    if publication.status not in (P.DRAFT, P.SCHEDULED):
        raise PublicationStateError(f"A {publication.status} publication cannot be scheduled.")
    if scheduled_at <= timezone.now():
        raise FieldValidationError(
            [
                {
                    "location": "body.scheduled_at",
                    "message": "Must be in the future.",
                    "value": scheduled_at.isoformat(),
                }
            ]
        )
    _require_media_ready(publication)
    _require_ready(publication, "publish_scheduled", intent=intent)
    if publication.status == P.DRAFT:
        usage_consume(workspace=publication.workspace, metric="scheduled_publications")
    publication.status = P.SCHEDULED
    publication.scheduled_at = scheduled_at
    publication.execution_intent = intent  # queued work keeps it; the worker decides with it
    publication.save(update_fields=["status", "scheduled_at", "execution_intent", "updated_at"])
    publication.destinations.update(
        status=S.SCHEDULED,
        due_at=scheduled_at,
        next_attempt_at=scheduled_at,
        deadline_at=_deadline(scheduled_at),
    )
    event_record(
        publication_id=publication.pk,
        kind="publication.scheduled",
        status=P.SCHEDULED,
        data={"scheduled_at": scheduled_at.isoformat()},
    )
    return publication


@transaction.atomic
def publication_publish_now(
    *,
    actor: Actor,
    publication_id: ModelId,
    expected_revision: int | None,
    intent: str = Publication.Intent.NORMAL,
) -> Publication:
    readiness.require_intent_allowed(user=actor.user, intent=intent)
    publication = _lock(actor, publication_id)
    _check_revision(publication, expected_revision)
    if publication.status not in (P.DRAFT, P.SCHEDULED):
        raise PublicationStateError(f"A {publication.status} publication cannot be published now.")
    _require_media_ready(publication)
    _require_ready(publication, "publish_immediate", intent=intent)
    now = timezone.now()
    publication.status = P.PUBLISHING
    publication.execution_intent = intent
    publication.scheduled_at = None  # published now: an earlier schedule no longer applies
    publication.save(update_fields=["status", "execution_intent", "scheduled_at", "updated_at"])
    publication.destinations.update(
        status=S.QUEUED, due_at=now, next_attempt_at=now, deadline_at=_deadline(now)
    )
    event_record(publication_id=publication.pk, kind="publication.queued", status=P.PUBLISHING)
    for destination_id in publication.destinations.values_list("pk", flat=True):
        transaction.on_commit(partial(tasks.nudge, tasks.delivery_send, str(destination_id)))
    return publication


@transaction.atomic
def publication_cancel(*, actor: Actor, publication_id: ModelId) -> Publication:
    publication = _lock(actor, publication_id)
    if publication.status not in (P.DRAFT, P.SCHEDULED):
        raise PublicationStateError(f"A {publication.status} publication cannot be canceled.")
    publication.status = P.CANCELED
    publication.save(update_fields=["status", "updated_at"])
    publication.destinations.update(status=S.CANCELED, next_attempt_at=None)
    event_record(publication_id=publication.pk, kind="publication.canceled", status=P.CANCELED)
    return publication


@transaction.atomic
def publication_retry_failed(*, actor: Actor, publication_id: ModelId) -> Publication:
    """Requeue only the failed or blocked destinations: never the published ones."""
    publication = _lock(actor, publication_id)
    readiness.require_intent_allowed(
        user=actor.user, intent=publication.execution_intent
    )  # requeues it
    retryable_rows = publication.destinations.filter(status__in=[S.FAILED, S.BLOCKED])
    retryable = list(retryable_rows)
    if publication.status not in (P.FAILED, P.PARTIALLY_PUBLISHED, P.PUBLISHING) or not retryable:
        raise PublicationStateError("Nothing to retry: no failed or blocked destination.")
    operation = "publish_scheduled" if publication.scheduled_at else "publish_immediate"
    _require_ready(publication, operation, retryable_rows)
    now = timezone.now()
    ids = [d.pk for d in retryable]
    Destination.objects.filter(pk__in=ids).update(
        status=S.QUEUED,
        attempts=0,
        due_at=now,
        next_attempt_at=now,
        deadline_at=_deadline(now),
        error_kind="",
        error_message="",
        action="",
        readiness=None,
        write_started_at=None,
    )
    publication.status = P.PUBLISHING
    publication.save(update_fields=["status", "updated_at"])
    event_record(
        publication_id=publication.pk,
        kind="publication.retry",
        status=P.PUBLISHING,
        data={"destinations": [str(i) for i in ids]},
    )
    for destination_id in ids:
        transaction.on_commit(partial(tasks.nudge, tasks.delivery_send, str(destination_id)))
    return publication
