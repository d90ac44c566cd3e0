"""Publishing: connected accounts, media, publications, destinations, events, idempotency.

The database is the source of truth for delivery (a transactional outbox): every destination row
says where it stands, and broker messages are only nudges.
"""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import ClassVar

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils.timezone import now

from workspaces.models import Workspace


class ProviderApp(models.Model):
    """A provider app registration, e.g. one Mastodon app per instance (client id/secret).

    A registration is bound to its OAuth callback URL, so it is kept per instance and callback
    (one per instance for a deployment with one public origin)."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    provider = models.CharField(max_length=40)
    instance_url = models.CharField(max_length=300, blank=True, default="")
    redirect_uri = models.CharField(max_length=500, blank=True, default="")
    credentials_encrypted = models.TextField()
    created_at = models.DateTimeField(default=now)

    class Meta:
        constraints: ClassVar = [
            models.UniqueConstraint(
                fields=["provider", "instance_url", "redirect_uri"], name="one_app_per_instance"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.provider} app {self.instance_url or '(default)'}"


class Account(models.Model):
    """A connected social account of a workspace."""

    class Status(models.TextChoices):
        ACTIVE = "active"
        RECONNECT_REQUIRED = "reconnect_required"  # grant revoked or invalid at the provider
        DISCONNECTED = "disconnected"  # removed by a user; kept for history

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="accounts")
    provider = models.CharField(max_length=40)
    external_id = models.CharField(max_length=200)
    username = models.CharField(max_length=200)
    display_name = models.CharField(max_length=200, blank=True, default="")
    avatar_url = models.CharField(max_length=500, blank=True, default="")
    # The account's public page on its provider; empty when there is none (docs/architecture.md "Providers").
    # db_default: the previous release inserts accounts without naming this column.
    profile_url = models.CharField(max_length=500, blank=True, default="", db_default="")
    instance_url = models.CharField(max_length=300, blank=True, default="")
    account_kind = models.CharField(max_length=40, default="user")
    granted_scopes = models.JSONField(default=list, blank=True)
    credentials_encrypted = models.TextField(blank=True, default="")
    app = models.ForeignKey(
        ProviderApp, on_delete=models.PROTECT, null=True, blank=True, related_name="+"
    )
    status = models.CharField(max_length=24, choices=Status.choices, default=Status.ACTIVE)
    status_reason = models.CharField(max_length=300, blank=True, default="")
    token_expires_at = models.DateTimeField(null=True, blank=True)
    # Token lifecycle (publishing/services/tokens.py): when the token was last refreshed, and
    # the lease of a refresh in progress (claimed under the row lock: one refresh per account
    # at a time; a lease left by a dead worker expires).
    token_refreshed_at = models.DateTimeField(null=True, blank=True)
    refresh_lease_until = models.DateTimeField(null=True, blank=True)
    connected_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(default=now)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints: ClassVar = [
            models.UniqueConstraint(
                fields=["workspace", "provider", "instance_url", "external_id"],
                condition=~Q(status="disconnected"),
                name="one_live_connection_per_account",
            ),
        ]
        indexes: ClassVar = [
            models.Index(fields=["workspace", "-created_at"], name="account_ws_newest"),
            # The built-in feed's public URLs name the account by its token (its external id).
            models.Index(fields=["provider", "external_id"], name="account_provider_external"),
            # The token refresh sweep: live accounts whose token expires soon.
            models.Index(fields=["status", "token_expires_at"], name="account_token_expiry"),
        ]

    def __str__(self) -> str:
        return f"{self.provider}:{self.username}"


class OAuthState(models.Model):
    """A pending OAuth connect. Only the SHA-256 of ``state`` is stored; the PKCE verifier is
    encrypted. Single use, short-lived."""

    state_hash = models.CharField(max_length=64, primary_key=True)
    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="+")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    provider = models.CharField(max_length=40)
    instance_url = models.CharField(max_length=300, blank=True, default="")
    app = models.ForeignKey(
        ProviderApp, on_delete=models.CASCADE, null=True, blank=True, related_name="+"
    )
    redirect_uri = models.CharField(max_length=500)
    code_verifier_encrypted = models.TextField(blank=True, default="")
    # The provider's authorization URL (encrypted: it carries the state). The connect answer
    # gives Herald's own start page instead, which binds the browser before sending it there.
    authorization_url_encrypted = models.TextField(blank=True, default="", db_default="")
    # SHA-256 of the nonce cookie of the one browser that confirmed the start page ("" until
    # then); the callback completes only in that browser.
    browser_nonce_hash = models.CharField(max_length=64, blank=True, default="", db_default="")
    created_at = models.DateTimeField(default=now)
    expires_at = models.DateTimeField()

    def __str__(self) -> str:
        return f"oauth {self.provider} for {self.workspace_id}"


class ConnectionChoice(models.Model):
    """A login that reached several accounts (Meta's Facebook Login: Pages and the Instagram
    accounts linked to them), waiting for its user to choose which to connect. The candidates,
    with their tokens, are encrypted; single use, as short-lived as a pending connect."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="+")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    provider = models.CharField(max_length=40)  # the provider the connect was started for
    app = models.ForeignKey(
        ProviderApp, on_delete=models.CASCADE, null=True, blank=True, related_name="+"
    )
    candidates_encrypted = models.TextField()
    created_at = models.DateTimeField(default=now)
    expires_at = models.DateTimeField()

    def __str__(self) -> str:
        return f"choice {self.provider} for {self.workspace_id}"


class MetaDataDeletion(models.Model):
    """A data-deletion request Meta sent for one of its users (the callback's answer names its
    confirmation code and a status URL showing this row). Keyed by the code; the Meta user id
    is kept only as a hash."""

    class Status(models.TextChoices):
        COMPLETE = "complete"  # every account of that user was revoked and its credentials erased

    confirmation_code = models.CharField(max_length=40, primary_key=True)
    meta_user_hash = models.CharField(max_length=64, db_index=True)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.COMPLETE)
    accounts_erased = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(default=now)

    def __str__(self) -> str:
        return f"meta data deletion {self.confirmation_code}"


class Media(models.Model):
    class Status(models.TextChoices):
        PROCESSING = "processing"
        READY = "ready"
        FAILED = "failed"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="media")
    file = models.FileField(upload_to="media/%Y/%m/", max_length=300)
    name = models.CharField(max_length=200)
    mime_type = models.CharField(max_length=100)
    size_bytes = models.PositiveBigIntegerField()
    width = models.PositiveIntegerField(null=True, blank=True)
    height = models.PositiveIntegerField(null=True, blank=True)
    checksum_sha256 = models.CharField(max_length=64)
    alt_text = models.CharField(max_length=1500, blank=True, default="")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(default=now)
    # Videos are probed by a worker after upload (``publishing.media_probe``); images and rows
    # from before probing existed are ``ready`` (the database default, so no backfill).
    status = models.CharField(
        max_length=16, choices=Status.choices, default=Status.READY, db_default=Status.READY
    )
    failure_reason = models.CharField(max_length=500, blank=True, default="", db_default="")
    probe = models.JSONField(null=True, blank=True)  # container, codecs, duration, size, ...
    poster = models.FileField(
        upload_to="media/posters/%Y/%m/", max_length=300, null=True, blank=True
    )

    class Meta:
        verbose_name_plural = "media"
        indexes: ClassVar = [
            models.Index(fields=["workspace", "-created_at"], name="media_ws_newest")
        ]

    def __str__(self) -> str:
        return self.name


class Upload(models.Model):
    """A resumable (tus) upload in progress: its bytes go to a spool file under the media root,
    or to an S3 multipart upload, as they arrive (``publishing.services.upload_store``); once
    all ``length`` bytes are in, the media service turns it into ``media``."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="+")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    length = models.PositiveBigIntegerField()
    offset = models.PositiveBigIntegerField(default=0)
    filename = models.CharField(max_length=200)
    filetype = models.CharField(max_length=100, blank=True, default="")
    alt_text = models.CharField(max_length=1500, blank=True, default="")
    spool_name = models.CharField(max_length=300)
    # With S3 media storage: the bucket key of the multipart upload, its ID until it completes,
    # and the parts sent so far ([{"PartNumber", "ETag"}]); empty with the local spool.
    s3_key = models.CharField(max_length=1024, blank=True, default="", db_default="")
    s3_upload_id = models.CharField(max_length=1024, blank=True, default="", db_default="")
    s3_parts = models.JSONField(default=list, blank=True, db_default=[])
    media = models.ForeignKey(
        Media, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(default=now)
    expires_at = models.DateTimeField()

    class Meta:
        indexes: ClassVar = [models.Index(fields=["expires_at"], name="upload_expires")]

    def __str__(self) -> str:
        return self.filename


class Publication(models.Model):
    class Status(models.TextChoices):
        DRAFT = "draft"
        SCHEDULED = "scheduled"
        PUBLISHING = "publishing"
        PUBLISHED = "published"
        PARTIALLY_PUBLISHED = "partially_published"
        FAILED = "failed"
        CANCELED = "canceled"

    class Intent(models.TextChoices):
        NORMAL = "normal"
        CERTIFICATION_TEST = "certification_test"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="publications")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    status = models.CharField(max_length=24, choices=Status.choices, default=Status.DRAFT)
    text = models.TextField(blank=True, default="")
    media_ids = models.JSONField(default=list, blank=True)  # ordered Media ids
    revision = models.PositiveIntegerField(default=1)
    scheduled_at = models.DateTimeField(null=True, blank=True)
    execution_intent = models.CharField(
        max_length=24, choices=Intent.choices, default=Intent.NORMAL
    )
    created_at = models.DateTimeField(default=now)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        indexes: ClassVar = [
            models.Index(fields=["workspace", "-created_at", "-id"], name="publication_ws_newest"),
            # A status-filtered page reads its rows in order from the cursor on (no sort of every
            # publication of that status): bench/README.md "Scale benchmark".
            models.Index(
                fields=["workspace", "status", "-created_at", "-id"],
                name="publication_ws_status_newest",
            ),
        ]

    def __str__(self) -> str:
        return f"publication {self.pk} ({self.status})"


class Destination(models.Model):
    """One publication on one connected account: the unit of delivery."""

    class Status(models.TextChoices):
        DRAFT = "draft"
        SCHEDULED = "scheduled"
        QUEUED = "queued"
        SENDING = "sending"
        RETRY_WAIT = "retry_wait"
        PUBLISHED = "published"
        AMBIGUOUS = "ambiguous"
        BLOCKED = "blocked"
        FAILED = "failed"
        CANCELED = "canceled"

    TERMINAL = (Status.PUBLISHED, Status.FAILED, Status.CANCELED)

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    publication = models.ForeignKey(
        Publication, on_delete=models.CASCADE, related_name="destinations"
    )
    account = models.ForeignKey(Account, on_delete=models.RESTRICT, related_name="destinations")
    position = models.PositiveSmallIntegerField(default=0)
    profile = models.CharField(max_length=80)  # output profile, e.g. "mastodon.post"
    text = models.TextField(null=True, blank=True)  # per-destination override of the text  # noqa: DJ001
    media_ids = models.JSONField(null=True, blank=True)  # per-destination override
    options = models.JSONField(default=dict, blank=True)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.DRAFT)
    idempotency_key = models.CharField(max_length=64, unique=True)
    attempts = models.PositiveSmallIntegerField(default=0)
    due_at = models.DateTimeField(null=True, blank=True)  # when it becomes sendable
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    claimed_at = models.DateTimeField(null=True, blank=True)
    claim_expires_at = models.DateTimeField(null=True, blank=True)
    deadline_at = models.DateTimeField(null=True, blank=True)
    write_started_at = models.DateTimeField(null=True, blank=True)  # recorded before the call
    first_attempt_at = models.DateTimeField(null=True, blank=True)  # first write with this key
    external_id = models.CharField(max_length=200, blank=True, default="")
    external_url = models.CharField(max_length=500, blank=True, default="")
    error_kind = models.CharField(max_length=24, blank=True, default="")
    error_message = models.CharField(max_length=500, blank=True, default="")
    action = models.CharField(max_length=24, blank=True, default="")
    readiness = models.JSONField(null=True, blank=True)  # the blocking decision, when blocked
    published_at = models.DateTimeField(null=True, blank=True)
    # A long send waiting on the provider (docs/decisions/0020-long-sends.md): the stage it is
    # at (uploading, processing, publishing), the adapter's state to resume from, and when to
    # check again. Null for every other destination.
    send_stage = models.CharField(max_length=16, null=True, blank=True)  # noqa: DJ001
    send_state = models.JSONField(null=True, blank=True)
    send_check_at = models.DateTimeField(null=True, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering: ClassVar = ["position"]
        constraints: ClassVar = [
            models.UniqueConstraint(
                fields=["publication", "account"], name="one_destination_per_account"
            ),
        ]
        indexes: ClassVar = [
            models.Index(fields=["status", "next_attempt_at"], name="destination_due"),
            models.Index(fields=["status", "claim_expires_at"], name="destination_claims"),
            # The dispatcher's due work (status scheduled, due_at <= now): an idle tick reads no
            # future scheduled row.
            models.Index(fields=["status", "due_at"], name="destination_scheduled_due"),
        ]

    def __str__(self) -> str:
        return f"{self.profile} → {self.account_id} ({self.status})"


class PublicationEvent(models.Model):
    """The timeline of a publication: every status change and provider outcome."""

    id = models.BigAutoField(primary_key=True)
    publication = models.ForeignKey(Publication, on_delete=models.CASCADE, related_name="events")
    destination = models.ForeignKey(
        Destination, on_delete=models.CASCADE, null=True, blank=True, related_name="events"
    )
    kind = models.CharField(max_length=40)
    status = models.CharField(max_length=24, blank=True, default="")
    detail = models.CharField(max_length=500, blank=True, default="")
    data = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(default=now)

    class Meta:
        indexes: ClassVar = [models.Index(fields=["publication", "id"], name="event_publication")]

    def __str__(self) -> str:
        return f"{self.kind} {self.status}"


class IdempotencyRecord(models.Model):
    """``Idempotency-Key`` of API mutations: same key + same body → the same response (24 h)."""

    TTL = timedelta(hours=24)

    id = models.BigAutoField(primary_key=True)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    key = models.CharField(max_length=200)
    method = models.CharField(max_length=8)
    path = models.CharField(max_length=300)
    request_hash = models.CharField(max_length=64)
    response_status = models.PositiveSmallIntegerField(null=True, blank=True)
    response_body = models.JSONField(null=True, blank=True)
    response_headers = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(default=now)

    class Meta:
        constraints: ClassVar = [
            models.UniqueConstraint(fields=["user", "key"], name="one_record_per_idempotency_key"),
        ]

    def __str__(self) -> str:
        return f"{self.method} {self.path} [{self.key}]"


class FeedEntry(models.Model):
    """One entry of a built-in Herald feed (provider ``feed``), written by the feed adapter in
    the worker: one per destination (its idempotency key is unique). ``delete`` withdraws an
    entry (``deleted_at``, text and enclosures dropped) and keeps the row, so the feed's
    ``Last-Modified`` moves and a re-send with the same key revives the same entry."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    account = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="feed_entries")
    idempotency_key = models.CharField(max_length=64, unique=True)
    text = models.TextField(blank=True, default="")
    published_at = models.DateTimeField(default=now)
    updated_at = models.DateTimeField(auto_now=True)
    deleted_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name_plural = "feed entries"
        indexes: ClassVar = [
            models.Index(fields=["account", "-published_at", "-id"], name="feed_entry_newest"),
        ]

    def __str__(self) -> str:
        return f"feed entry {self.pk}"


class FeedEnclosure(models.Model):
    """A media item of a feed entry, served by Herald at a URL bound to the feed's token."""

    id = models.BigAutoField(primary_key=True)
    entry = models.ForeignKey(FeedEntry, on_delete=models.CASCADE, related_name="enclosures")
    media = models.ForeignKey(Media, on_delete=models.CASCADE, related_name="+")
    position = models.PositiveSmallIntegerField(default=0)

    class Meta:
        ordering: ClassVar = ["position"]
        constraints: ClassVar = [
            models.UniqueConstraint(
                fields=["entry", "position"], name="one_enclosure_per_position"
            ),
        ]
        indexes: ClassVar = [models.Index(fields=["media", "entry"], name="feed_enclosure_media")]

    def __str__(self) -> str:
        return f"enclosure {self.media_id} of {self.entry_id}"


class SchedulerHeartbeat(models.Model):
    """Operators' delivery view: when the beat-driven dispatcher last ran."""

    name = models.CharField(max_length=40, primary_key=True)
    last_tick_at = models.DateTimeField()

    def __str__(self) -> str:
        return f"{self.name} @ {self.last_tick_at}"


class ProviderQuotaDay(models.Model):
    """API units a network's quota counted for one quota day (YouTube: per Google Cloud
    project, days in Pacific time). Written through ``publishing.quota_ledger`` only."""

    id = models.BigAutoField(primary_key=True)
    provider = models.CharField(max_length=40)
    day = models.DateField()
    units = models.PositiveIntegerField(default=0)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints: ClassVar = [
            models.UniqueConstraint(fields=["provider", "day"], name="one_quota_row_per_day"),
        ]

    def __str__(self) -> str:
        return f"{self.provider} {self.day}: {self.units}"


class PostingSchedule(models.Model):
    """A workspace's posting queue: weekly time slots in its time zone
    (``publishing.services.posting_queue``). ``slots`` is a list of
    ``{"weekday": 0-6 (Monday = 0), "time": "HH:MM", "account_id": null | account id}``."""

    workspace = models.OneToOneField(
        Workspace, on_delete=models.CASCADE, primary_key=True, related_name="+"
    )
    timezone = models.CharField(max_length=64, default="UTC")
    slots = models.JSONField(default=list, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"{self.timezone}: {len(self.slots)} slots"


class CalendarFeed(models.Model):
    """The secret URL of a workspace's iCalendar feed of scheduled posts
    (``publishing.calendar_feed``): the random token in the URL is the only key; rotating it
    replaces the row's token, so the previous URL stops working."""

    workspace = models.OneToOneField(
        Workspace, on_delete=models.CASCADE, primary_key=True, related_name="+"
    )
    token = models.CharField(max_length=32, unique=True)  # secrets.token_hex(16)
    created_at = models.DateTimeField(default=now)

    def __str__(self) -> str:
        return f"calendar of {self.workspace_id}"
