"""Sending one destination: claim it, re-check readiness, record the write before the provider
call, send with the destination's idempotency key, record the outcome."""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import timedelta
from functools import partial
from typing import Any

from django.conf import settings
from django.db.models import F, Q, Value
from django.db.models.functions import Coalesce
from django.utils import timezone

from config.db import release_connection
from config.queries import CompiledQuery, Param
from config.types import ModelId
from providers import get_adapter
from providers.base import (
    ErrorKind,
    MediaItem,
    Pending,
    ProviderError,
    PublishRequest,
    PublishResult,
)
from publishing.models import Destination, Media
from publishing.services import (
    tokens,  # just-in-time token refresh before a send
    video_rules,
)
from publishing.services.accounts import account_context
from publishing.services.delivery.outcomes import (
    S,
    handle_failure,
    publish_succeeded,
    send_pending,
    settle,
    wait_for_network,
)
from publishing.services.delivery.politeness import (
    check_later,
    in_flight_slots,
    pause_host,
    release_slots,
    take_slots,
    unclaim,
)
from publishing.services.media import media_absolute_url
from readiness import services as readiness

logger = logging.getLogger(__name__)

# How soon a send waiting for its media's probe looks again (the probe takes seconds).
MEDIA_WAIT_CHECK_SECONDS = 5.0


def _claim(destination_id: ModelId) -> bool:
    now = timezone.now()
    lease = timedelta(seconds=settings.HERALD_DELIVERY_LEASE_SECONDS)
    return bool(
        Destination.objects.filter(pk=destination_id, status__in=[S.QUEUED, S.RETRY_WAIT])
        .filter(Q(next_attempt_at__isnull=True) | Q(next_attempt_at__lte=now))
        .update(
            status=S.SENDING,
            claimed_at=now,
            claim_expires_at=now + lease,
            attempts=F("attempts") + 1,
            updated_at=now,
        )
    )


# The destination to send, with everything the send needs (one query, compiled once per process).
DESTINATION_FOR_SEND = CompiledQuery(
    lambda: Destination.objects.select_related("publication", "account", "account__app").filter(
        pk=Param("destination_id", Destination, "id")
    )
)


def destination_media(destination: Destination) -> list[Media]:
    """The media the destination sends (its own list or the publication's), in order."""
    publication = destination.publication
    media_ids = (
        destination.media_ids if destination.media_ids is not None else publication.media_ids
    )
    # Most posts have no media: no queryset to build then (an empty IN sends no query, but the
    # ORM still builds one, about 0.2 ms of CPU per delivery).
    media_by_id = (
        {str(m.pk): m for m in Media.objects.filter(pk__in=media_ids)} if media_ids else {}
    )
    return [m for media_id in media_ids or [] if (m := media_by_id.get(str(media_id))) is not None]


def request_for(destination: Destination, media: list[Media] | None = None) -> PublishRequest:
    """What the provider is asked to publish; ``media`` when the caller already read them."""
    publication = destination.publication
    text = destination.text if destination.text is not None else publication.text
    items = [
        MediaItem(
            name=m.name,
            mime_type=m.mime_type,
            size=m.size_bytes,
            open=partial(m.file.open, "rb"),
            alt_text=m.alt_text,
            url=media_absolute_url(m),
            media_id=str(m.pk),
            probe=dict(m.probe or {}),
            poster=partial(m.poster.open, "rb") if m.poster else None,
        )
        for m in (destination_media(destination) if media is None else media)
    ]
    return PublishRequest(
        profile=destination.profile,
        text=text or "",
        media=items,
        options=dict(destination.options or {}),
        idempotency_key=destination.idempotency_key,
        first_attempt_at=destination.first_attempt_at,
        publication_id=str(publication.pk),
        created_at=publication.created_at,
        scheduled_at=publication.scheduled_at,
        send_state=dict(destination.send_state or {}),
    )


def transfer_seconds(request: PublishRequest) -> float:
    """How long the request's media take to upload at the documented minimum throughput
    (HERALD_DELIVERY_MIN_THROUGHPUT_BYTES): what a send's claim and slots add to their base
    (docs/decisions/0020-long-sends.md). 0 for a post without media."""
    size = sum(item.size for item in request.media)
    return size / settings.HERALD_DELIVERY_MIN_THROUGHPUT_BYTES if size else 0.0


def _claim_check(destination_id: ModelId) -> bool:
    """Claim a long send whose next check is due (it waits ``sending`` with no claim, see
    :func:`outcomes.send_pending`), for one lease. Only asked when the usual claim failed."""
    now = timezone.now()
    lease = timedelta(seconds=settings.HERALD_DELIVERY_LEASE_SECONDS)
    return bool(
        Destination.objects.filter(
            pk=destination_id,
            status=S.SENDING,
            claim_expires_at__isnull=True,
            send_stage__isnull=False,
            send_check_at__lte=now,
        ).update(claimed_at=now, claim_expires_at=now + lease, updated_at=now)
    )


def delivery_send(*, destination_id: ModelId) -> None:
    """Idempotent: a second message for the same destination finds nothing to claim. The
    message of a long send's due check resumes it (docs/decisions/0020-long-sends.md)."""
    resuming = False
    if not _claim(destination_id):
        if not _claim_check(destination_id):
            return
        resuming = True
    destination = DESTINATION_FOR_SEND.instances(destination_id=destination_id)[0]
    if resuming and _waited_too_long(destination):
        return
    media = destination_media(destination)
    if not resuming and (
        _waits_for_media(destination, media) or _breaks_video_rules(destination, media)
    ):
        return
    prepared = _prepare(destination)
    if prepared is None:
        return
    adapter, context = prepared
    request = request_for(destination, media)
    # Politeness (docs/operations.md "Delivery: politeness and fairness"): one slot of the account and one of the provider host for
    # the call; none while the host is paused after a 429 or Retry-After. Without a slot the
    # destination goes back to the queue: nothing was sent and no attempt is counted.
    slots = in_flight_slots(
        destination, context, lease_seconds=0.0 if resuming else transfer_seconds(request)
    )
    come_back_after = take_slots(slots)
    if come_back_after is not None:
        (check_later if resuming else unclaim)(destination, come_back_after)
        return
    try:
        if resuming:
            state = dict(destination.send_state or {})
            _call_provider(
                destination,
                slots,
                partial(adapter.resume, account=context, request=request, state=state),
            )
        else:
            _send_claimed(destination, adapter, context, slots, request)
    except BaseException:
        release_slots(slots)
        raise


def _waits_for_media(destination: Destination, media: list[Media]) -> bool:
    """A video still being probed is waited for before anything is sent: the claim is given
    back (no attempt counted, no thread held) and the send comes back in
    MEDIA_WAIT_CHECK_SECONDS, for at most HERALD_MEDIA_WAIT_MAX_SECONDS after it was due. A
    media that ended ``failed``, or the bound passed, fails the destination with the reason.
    Whether the send stops here."""
    if not media:
        return False
    failed = next((m for m in media if m.status == Media.Status.FAILED), None)
    if failed is not None:
        reason = failed.failure_reason or "no reason recorded"
        _fail_for_media(destination, f"Media {failed.pk} failed processing: {reason}")
        return True
    if all(m.status != Media.Status.PROCESSING for m in media):
        return False
    bound = settings.HERALD_MEDIA_WAIT_MAX_SECONDS
    since = destination.due_at or destination.publication.created_at
    if timezone.now() - since > timedelta(seconds=bound):
        _fail_for_media(
            destination,
            f"Media still processing {bound} s after the send was due; Herald stopped waiting.",
        )
        return True
    unclaim(destination, MEDIA_WAIT_CHECK_SECONDS)
    return True


def _breaks_video_rules(destination: Destination, media: list[Media]) -> bool:
    """The destination's video rules, checked again against the probe's facts before any
    byte is sent: a video still ``processing`` when the publication was scheduled was only
    judged on what was known then. A broken rule fails the destination with the rule in words
    (not retried: the same file would be refused again). Whether the send stops here."""
    if not any(video_rules.is_video(m) for m in media):
        return False  # no query, no work for text and image posts
    profile = get_adapter(destination.account.provider).capabilities.profile(destination.profile)
    if profile is None:
        return False
    problems = video_rules.destination_video_errors(profile, [(m.name, m) for m in media])
    if not problems:
        return False
    messages = dict.fromkeys(f"{p['location']}: {p['message']}" for p in problems)
    _fail_for_media(destination, " ".join(messages))
    return True


def _fail_for_media(destination: Destination, message: str) -> None:
    settle(destination, S.FAILED, kind="media", message=message, action="edit")


def _prepare(destination: Destination) -> tuple[Any, Any] | None:
    """The adapter and the account's context for a claimed send, once the token is fresh and
    readiness allows the call; None when the destination was settled instead (blocked, or its
    stored credentials cannot be read)."""
    destination.account = tokens.account_token_ensure_fresh(account=destination.account)
    operation = "publish_scheduled" if destination.publication.scheduled_at else "publish_immediate"
    decision = readiness.decide_account(
        account=destination.account,
        operation=operation,
        profile=destination.profile,
        intent=destination.publication.execution_intent,
    )
    if not decision.executable:
        settle(
            destination,
            S.BLOCKED,
            kind="readiness",
            message=f"Blocked by provider readiness ({decision.state}).",
            action="reconnect" if decision.state == "reconnect_required" else "contact_support",
            readiness_decision=decision.as_dict(),
        )
        return None
    # Everything that can fail without the provider is prepared first: such a failure is not an
    # ambiguous write (nothing was sent).
    adapter = get_adapter(destination.account.provider)
    try:
        context = account_context(destination.account)
    except Exception as exc:
        logger.exception("Cannot prepare destination %s", destination.pk)
        settle(
            destination,
            S.FAILED,
            kind="internal",
            action="contact_support",
            message=f"The stored credentials cannot be read ({type(exc).__name__}); reconnect the account.",
        )
        return None
    return adapter, context


def _waited_too_long(destination: Destination) -> bool:
    """A long send the provider has not finished HERALD_DELIVERY_PENDING_MAX_SECONDS after its
    write started fails with the reason (it is never waited for forever); whether it did."""
    bound = settings.HERALD_DELIVERY_PENDING_MAX_SECONDS
    started = destination.write_started_at
    if destination.send_stage == "waiting":
        return False  # a provider's publishing limit: the adapter bounds that wait itself
    if started is None or timezone.now() - started <= timedelta(seconds=bound):
        return False
    stage = destination.send_stage or "processing"
    settle(
        destination,
        S.FAILED,
        kind="provider_timeout",
        action="retry",
        message=f"The provider was still {stage} the media after {bound} s; Herald stopped waiting.",
    )
    return True


def _send_claimed(
    destination: Destination,
    adapter: Any,
    context: Any,
    slots: dict[str, Any],
    request: PublishRequest,
) -> None:
    started = timezone.now()
    if destination.first_attempt_at is None:
        destination.first_attempt_at = started
        request.first_attempt_at = started
    # The write is recorded before the call: if this worker dies from here on, the outcome is
    # unknown and the destination is reconciled, never re-sent blindly. (One statement: the
    # first attempt's time is kept if there was one; a claim with media to upload is extended
    # by their transfer time, one without keeps the lease its claim took.)
    transfer = transfer_seconds(request)
    sized = (
        {
            "claim_expires_at": started
            + timedelta(seconds=settings.HERALD_DELIVERY_LEASE_SECONDS + transfer)
        }
        if transfer
        else {}
    )
    Destination.objects.filter(pk=destination.pk).update(
        write_started_at=started,
        first_attempt_at=Coalesce(F("first_attempt_at"), Value(started)),
        **sized,
    )
    _call_provider(destination, slots, partial(adapter.publish, account=context, request=request))


def _call_provider(
    destination: Destination,
    slots: dict[str, Any],
    call: Callable[[], PublishResult | Pending],
) -> None:
    """Make the provider call and record what it answered: published, a long send to check
    again later, or a failure (retried, failed, or ambiguous)."""
    release_connection()  # pooled: the connection serves other sends while this one waits
    try:
        result = call()
    except ProviderError as exc:
        release_slots(slots)
        if exc.wait_reason and exc.retry_after is not None:
            # A network's own wait (YouTube's quota day) holds this send, not the host.
            wait_for_network(destination, exc)
            return
        if (exc.kind == ErrorKind.RATE_LIMITED or exc.retry_after is not None) and exc.host_wide:
            pause_host(slots["host"], exc.retry_after)
        handle_failure(destination, exc)
        return
    except Exception as exc:
        release_slots(slots)
        logger.exception("Unexpected failure sending destination %s", destination.pk)
        handle_failure(
            destination,
            ProviderError(ErrorKind.AMBIGUOUS, f"Unexpected error: {type(exc).__name__}"),
        )
        return
    release_slots(slots)
    if isinstance(result, Pending):
        send_pending(destination, result)
    else:
        publish_succeeded(destination, result)
