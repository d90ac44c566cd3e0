"""Publications: create, replace, schedule, publish now, cancel, retry failed, delete.

Queue actions only write rows; the worker delivers. A successful queue response never claims
delivery: each destination's status says what shipped.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import partial
from typing import Any, Protocol

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from config.errors import (
    FieldValidationError,
    NotFoundError,
    PermissionDeniedError,
    RevisionConflictError,
    field_error,
)
from config.nudge import nudge
from config.registry import One
from config.types import ModelId
from providers import get_adapter
from providers.base import OptionSpec, OutputProfile
from publishing import tasks
from publishing.errors import (
    PublicationStateError,
    ReadinessBlockedError,
)
from publishing.models import Account, Destination, Media, Publication, PublicationEvent
from publishing.services import media_links, video_rules
from publishing.services.announcements import announce
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


# A publication's voice override lives in the voice app, which depends on publishing: it
# registers its setter here (``VoiceConfig.ready``), so publishing never imports voice. The
# setter runs inside the publishing service's transaction, after its access checks.
VOICE_OVERRIDE: One[VoiceOverrideSetter] = One("publishing.voice_override")


def _voice_override_set(publication: Publication, voice_profile_id: ModelId | None) -> None:
    VOICE_OVERRIDE.get()(publication=publication, voice_profile_id=voice_profile_id)


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
    destination_pk = destination.pk if destination is not None else destination_id
    PublicationEvent.objects.create(
        publication_id=publication_id,
        destination_id=destination_pk,
        kind=kind,
        status=status,
        detail=detail[:500],
        data=data or {},
    )
    announce(kind=kind, publication_id=publication_id, destination_id=destination_pk)


# --- Validation against capability metadata -------------------------------------------------


def _default_profile(account: Account) -> OutputProfile:
    return get_adapter(account.provider).capabilities.profiles[0]


NO_PUBLIC_ORIGIN = (
    "{profile} fetches media from a public URL, and this server has none: set "
    "HERALD_PUBLIC_URL to an address reachable from the internet, or store media in S3 "
    "(HERALD_S3_BUCKET)."
)


def _validate(
    *, workspace_id: ModelId, text: str, media_ids: list[str], destinations: list[dict[str, Any]]
) -> tuple[list[Account], list[dict[str, Any]]]:
    """Every destination against its output profile. Returns the accounts and a copy of each
    destination with its profile and options settled; the caller's dicts are left as they are.

    The one place that decides raise or collect: an unknown, disconnected or foreign account is
    refused (404/403, ``_destination_accounts``) before any field is judged; every failing field
    is then collected, in request order, into one 422."""
    errors = _destination_list_errors(destinations)
    media = _workspace_media(workspace_id, media_ids, destinations)
    errors += [
        _no_such_media(f"body.media_ids[{index}]", media_id)
        for index, media_id in enumerate(media_ids)
        if media_id not in media
    ]
    accounts: list[Account] = []
    settled: list[dict[str, Any]] = []
    for index, item, account in _destination_accounts(workspace_id, destinations):
        destination, destination_errors = _check_destination(
            f"body.destinations[{index}]",
            item,
            account,
            text=text,
            media_ids=media_ids,
            media=media,
        )
        accounts.append(account)
        settled.append(destination)
        errors += destination_errors
    if errors:
        raise FieldValidationError(errors)
    return accounts, settled


def _destination_list_errors(destinations: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The list itself: its length, each account ID, each account once."""
    errors: list[dict[str, Any]] = []
    if not destinations:
        errors.append(field_error("body.destinations", "At least one destination."))
    if len(destinations) > MAX_DESTINATIONS:
        errors.append(field_error("body.destinations", f"At most {MAX_DESTINATIONS}."))
    account_ids = [_parse_uuid(item.get("account_id")) for item in destinations]
    errors += [
        field_error(f"body.destinations[{index}].account_id", "Unknown account.")
        for index, account_id in enumerate(account_ids)
        if account_id is None
    ]
    named = [account_id for account_id in account_ids if account_id is not None]
    if len(set(named)) != len(named):
        errors.append(field_error("body.destinations", "Each account may appear once."))
    return errors


def _workspace_media(
    workspace_id: ModelId, media_ids: list[str], destinations: list[dict[str, Any]]
) -> dict[str, Media]:
    """The workspace's media named anywhere in the request, by ID (one query)."""
    wanted = set(media_ids)
    for item in destinations:
        wanted.update(item.get("media_ids") or [])
    return {
        str(m.pk): m for m in Media.objects.filter(workspace_id=workspace_id, pk__in=_uuids(wanted))
    }


def _no_such_media(location: str, media_id: str) -> dict[str, Any]:
    return field_error(location, "No such media in this workspace.", value=media_id)


def _destination_accounts(
    workspace_id: ModelId, destinations: list[dict[str, Any]]
) -> list[tuple[int, dict[str, Any], Account]]:
    """Each destination whose account ID parses, with its account, in request order. The first
    account that is unknown or disconnected (404) or of another workspace (403) is refused here,
    whatever else is wrong: the caller may not learn more about a request it cannot make."""
    parsed = [
        (index, item, _parse_uuid(item.get("account_id")))
        for index, item in enumerate(destinations)
    ]
    accounts = {
        a.pk: a
        for a in Account.objects.filter(pk__in=[pk for _, _, pk in parsed if pk is not None])
    }
    found: list[tuple[int, dict[str, Any], Account]] = []
    for index, item, account_id in parsed:
        if account_id is None:
            continue  # "Unknown account.", in _destination_list_errors
        account = accounts.get(account_id)
        if account is None or account.status == Account.Status.DISCONNECTED:
            raise NotFoundError(f"No connected account with ID {item.get('account_id')}.")
        if str(account.workspace_id) != str(workspace_id):
            raise PermissionDeniedError(
                "A destination account belongs to another workspace.",
                code="account_not_in_workspace",
            )
        found.append((index, item, account))
    return found


@dataclass(frozen=True)
class _Content:
    """What one destination sends (its own text and media, or the publication's) and where a
    422 about each points."""

    text: str
    text_location: str
    media_ids: list[str]
    media_location: str
    own_media: bool

    @classmethod
    def of(cls, prefix: str, item: dict[str, Any], text: str, media_ids: list[str]) -> _Content:
        own_text = item.get("text") is not None
        own_media = item.get("media_ids") is not None
        return cls(
            text=item["text"] if own_text else text,
            text_location=f"{prefix}.text" if own_text else "body.text",
            media_ids=item["media_ids"] if own_media else media_ids,
            media_location=f"{prefix}.media_ids" if own_media else "body.media_ids",
            own_media=own_media,
        )


def _check_destination(
    prefix: str,
    item: dict[str, Any],
    account: Account,
    *,
    text: str,
    media_ids: list[str],
    media: dict[str, Media],
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """One destination against its output profile: the destination as it is stored (profile
    and options settled) and its errors. An unknown profile is its only error."""
    profile_key = item.get("profile") or _default_profile(account).key
    profile = get_adapter(account.provider).capabilities.profile(profile_key)
    if profile is None:
        message = f"{account.provider} has no format {profile_key}."
        return dict(item), [field_error(f"{prefix}.profile", message, value=profile_key)]
    content = _Content.of(prefix, item, text, media_ids)
    options = dict(item.get("options") or {})
    errors = [
        *_text_errors(profile, content),
        *_media_count_errors(profile, content),
        *_media_item_errors(profile, content, media),
        *_option_errors(f"{prefix}.options", profile, options),
    ]
    settled = _settled_options(profile, options)
    errors += _content_rule_errors(prefix, profile, content, media, settled)
    destination = {**item, "profile": profile.key, "options": settled}
    return destination, errors


def _content_rule_errors(
    prefix: str,
    profile: OutputProfile,
    content: _Content,
    media: dict[str, Media],
    options: dict[str, Any],
) -> list[dict[str, Any]]:
    """The format's rules over its media types and options together (YouTube's one video and
    thumbnail image), at the media list or at the option they name."""
    if profile.content_rules is None:
        return []
    types = [media[m].mime_type for m in content.media_ids if m in media]
    return [
        field_error(
            content.media_location if where == "media" else f"{prefix}.options.{where}", problem
        )
        for where, problem in profile.content_rules(types, {k: str(v) for k, v in options.items()})
    ]


def _text_errors(profile: OutputProfile, content: _Content) -> list[dict[str, Any]]:
    location, text = content.text_location, content.text
    errors: list[dict[str, Any]] = []
    length = profile.text_counter(text)
    if length > profile.text_limit:
        limit = f"{profile.key} allows {profile.text_limit} {profile.counting_rule}"
        errors.append(field_error(location, f"{limit}; this text has {length}."))
    if profile.text_required and not text.strip():
        errors.append(field_error(location, f"{profile.key} needs text."))
    if any(char in text for char in profile.text_forbidden):
        refused = " or ".join(profile.text_forbidden)
        errors.append(field_error(location, f"{profile.key} refuses {refused} in the text."))
    if not text.strip() and not content.media_ids:
        errors.append(field_error(location, "Send text, media or both."))
    if profile.text_rules is not None:
        errors += [field_error(location, problem) for problem in profile.text_rules(text)]
    return errors


def _media_count_errors(profile: OutputProfile, content: _Content) -> list[dict[str, Any]]:
    location, rule = content.media_location, profile.media
    errors: list[dict[str, Any]] = []
    if len(content.media_ids) > rule.max_count:
        errors.append(field_error(location, f"{profile.key} allows {rule.max_count} media items."))
    if rule.required and not content.media_ids:
        errors.append(field_error(location, f"{profile.key} needs a media item."))
    if rule.by_url and content.media_ids and not media_links.public_origin():
        errors.append(field_error(location, NO_PUBLIC_ORIGIN.format(profile=profile.key)))
    return errors


def _media_item_errors(
    profile: OutputProfile, content: _Content, media: dict[str, Media]
) -> list[dict[str, Any]]:
    """Each item in order, then the network's video rules over the items found. A missing item
    of the publication's own list was reported once, at ``body.media_ids[i]``."""
    errors: list[dict[str, Any]] = []
    found: list[tuple[str, Media]] = []
    for index, media_id in enumerate(content.media_ids):
        location = f"{content.media_location}[{index}]"
        item = media.get(media_id)
        if item is None:
            if content.own_media:
                errors.append(_no_such_media(location, media_id))
            continue
        found.append((location, item))
        errors += _media_fit_errors(profile, location, item)
    errors += _total_size_errors(profile, found)
    return errors + video_rules.destination_video_errors(profile, found)


def _total_size_errors(
    profile: OutputProfile, found: list[tuple[str, Media]]
) -> list[dict[str, Any]]:
    """The items past the format's limit on one post's media together (Discord's 25 MiB per
    webhook message), each at its own location."""
    limit = profile.media.max_total_bytes
    if not limit:
        return []
    network = profile.video.network if profile.video else profile.key
    errors, total = [], 0
    for location, item in found:
        total += item.size_bytes
        if total > limit:
            message = (
                f"{network}: up to {limit // (1024 * 1024)} MB of attachments per message in "
                f"all; with this one they come to {total / (1024 * 1024):.1f} MB. "
                "Move it to another post or make it smaller."
            )
            errors.append(field_error(location, message))
    return errors


def _media_fit_errors(profile: OutputProfile, location: str, item: Media) -> list[dict[str, Any]]:
    video = profile.video if video_rules.is_video(item) else None
    if video_rules.is_video(item) and (video is None or not video.delivers):
        return []  # "video is not supported yet", from the video rules
    if item.mime_type not in profile.media.mime_types:
        return [field_error(location, f"{profile.key} does not take {item.mime_type}.")]
    if video is not None and video.max_bytes:
        return []  # the network's video size, in its words, from the video rules
    if item.size_bytes > profile.media.max_bytes:
        limit = profile.media.max_bytes
        return [field_error(location, f"{profile.key} takes at most {limit} bytes per item.")]
    return _aspect_errors(profile, location, item)


def _aspect_errors(profile: OutputProfile, location: str, item: Media) -> list[dict[str, Any]]:
    """An image outside the format's aspect ratios (when it bounds them and the size is known)."""
    if profile.image_aspect is None or video_rules.is_video(item):
        return []
    if not item.width or not item.height:
        return []
    low, high = profile.image_aspect
    ratio = item.width / item.height
    if low - 0.005 <= ratio <= high + 0.005:
        return []
    message = (
        f"{profile.key} takes images with an aspect ratio (width / height) from {low:.2f} "
        f"to {high:.2f}; this one is {item.width}x{item.height} ({ratio:.2f})."
    )
    return [field_error(location, message)]


def _option_errors(
    location: str, profile: OutputProfile, options: dict[str, Any]
) -> list[dict[str, Any]]:
    """Unknown options (by name), then each of the format's options in its order."""
    known = {spec.name for spec in profile.options}
    errors = [
        field_error(f"{location}.{name}", "Unknown option for this format.")
        for name in sorted(set(options) - known)
    ]
    for spec in profile.options:
        value = options.get(spec.name, spec.default)
        errors += _option_value_errors(f"{location}.{spec.name}", spec, value)
    return errors


def _option_value_errors(location: str, spec: OptionSpec, value: Any) -> list[dict[str, Any]]:
    if value in (None, ""):
        return [field_error(location, "This option is required.")] if spec.required else []
    value = str(value)
    errors: list[dict[str, Any]] = []
    if spec.choices and value not in spec.choices:
        errors.append(field_error(location, f"One of: {', '.join(spec.choices)}.", value=value))
    if len(value) > spec.max_length:
        errors.append(field_error(location, f"At most {spec.max_length} characters."))
    if any(char in value for char in spec.forbidden):
        errors.append(field_error(location, f"May not contain {' or '.join(spec.forbidden)}."))
    return errors


def _settled_options(profile: OutputProfile, options: dict[str, Any]) -> dict[str, Any]:
    """The options as stored: each of the format's options given or defaulted, as text."""
    settled = dict(options)
    for spec in profile.options:
        value = options.get(spec.name, spec.default)
        if value not in (None, ""):
            settled[spec.name] = str(value)
    return settled


def _parse_uuid(value: Any) -> uuid.UUID | None:
    try:
        return uuid.UUID(str(value))
    except ValueError:
        return None


def _uuids(values: set[str]) -> list[uuid.UUID]:
    return [parsed for value in values if (parsed := _parse_uuid(value)) is not None]


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
    accounts, destinations = _validate(
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
    accounts, destinations = _validate(
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
    published, deleting the record of it is admin-only (docs/people-and-roles.md "Roles")."""
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


def _require_media_fit(publication: Publication) -> None:
    """Every video a destination sends is within its network's rules: a ``failed`` one or a
    broken rule is a 422 at the destination's ``media_ids[j]``. One still ``processing`` is
    accepted; the send waits for it (``delivery.send``, ``HERALD_MEDIA_WAIT_MAX_SECONDS``)."""
    rows = list(publication.destinations.select_related("account").order_by("position"))
    wanted = set(publication.media_ids or [])
    for d in rows:
        wanted.update(d.media_ids or [])
    media = {
        str(m.pk): m
        for m in Media.objects.filter(workspace_id=publication.workspace_id, pk__in=_uuids(wanted))
    }
    errors: list[dict[str, Any]] = []
    for d in rows:
        own = d.media_ids is not None
        ids: list[str] = (d.media_ids if own else publication.media_ids) or []
        base = f"destinations[{d.position}].media_ids" if own else "media_ids"
        items = [(f"{base}[{j}]", media[i]) for j, i in enumerate(ids) if i in media]
        caps = get_adapter(d.account.provider).capabilities
        profile = caps.profile(d.profile) or _default_profile(d.account)
        errors.extend(video_rules.destination_video_errors(profile, items))
    if errors:
        raise FieldValidationError(errors)


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
        raise FieldValidationError.at(
            "body.scheduled_at", "Must be in the future.", value=scheduled_at.isoformat()
        )
    _require_media_fit(publication)
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
    _require_media_fit(publication)
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
        transaction.on_commit(partial(nudge, tasks.delivery_send, str(destination_id)))
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
        transaction.on_commit(partial(nudge, tasks.delivery_send, str(destination_id)))
    return publication
