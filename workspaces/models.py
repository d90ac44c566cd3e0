"""Identity: users, organizations, workspaces, memberships, invitations, API tokens, access audit,
plans and billing records."""

from __future__ import annotations

import uuid
from typing import Any, ClassVar

from django.contrib.auth.base_user import AbstractBaseUser, BaseUserManager
from django.contrib.auth.models import PermissionsMixin
from django.db import models
from django.db.models import Q
from django.db.models.functions import Lower
from django.utils.crypto import salted_hmac
from django.utils.timezone import now


class UserManager(BaseUserManager["User"]):
    use_in_migrations = True

    def _create(self, email: str, password: str | None, **extra: Any) -> User:
        if not email:
            raise ValueError("An e-mail address is required")
        user = self.model(email=self.normalize_email(email).lower(), **extra)
        user.set_password(password)
        user.save(using=self._db)
        return user

    def create_user(self, email: str, password: str | None = None, **extra: Any) -> User:
        extra.setdefault("is_staff", False)
        extra.setdefault("is_superuser", False)
        return self._create(email, password, **extra)

    def create_superuser(self, email: str, password: str | None = None, **extra: Any) -> User:
        extra["is_staff"] = True
        extra["is_superuser"] = True
        return self._create(email, password, **extra)


class User(AbstractBaseUser, PermissionsMixin):
    """``email_verified_at``: when the person last proved they read this mailbox (an invitation
    link that came by e-mail, a verification link, a password reset); ``None``: never, so the
    account may have been created by whoever held a hand-delivered link. ``session_epoch``: a
    proof of the mailbox raises it, which ends every browser session (see
    ``get_session_auth_hash``) without touching the password."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    email = models.EmailField(unique=True)
    name = models.CharField(max_length=150, blank=True)
    is_active = models.BooleanField(default=True)
    is_staff = models.BooleanField(default=False)
    created_at = models.DateTimeField(default=now)
    email_verified_at = models.DateTimeField(null=True, blank=True)
    session_epoch = models.IntegerField(default=0, db_default=0, editable=False)

    objects: ClassVar[UserManager] = UserManager()

    USERNAME_FIELD = "email"
    EMAIL_FIELD = "email"
    REQUIRED_FIELDS: ClassVar[list[str]] = []

    class Meta:
        constraints: ClassVar = [
            models.UniqueConstraint(Lower("email"), name="user_email_ci_unique"),
        ]

    def __str__(self) -> str:
        return self.email

    @property
    def email_verified(self) -> bool:
        return self.email_verified_at is not None

    # Django keeps a hash of the password in each session and ends the sessions whose hash no
    # longer matches. Mixing in ``session_epoch`` ends them all when it is raised too; at 0 the
    # hash is Django's own, so sessions opened before this field existed stay valid.
    _SESSION_HASH_SALT = "django.contrib.auth.models.AbstractBaseUser.get_session_auth_hash"

    def _session_hash(self, secret: str | bytes | None = None) -> str:
        value = self.password if not self.session_epoch else f"{self.password}:{self.session_epoch}"
        return salted_hmac(
            self._SESSION_HASH_SALT, value, secret=secret, algorithm="sha256"
        ).hexdigest()

    def get_session_auth_hash(self) -> str:
        return self._session_hash()

    def get_session_auth_fallback_hash(self) -> Any:
        from django.conf import settings

        for fallback_secret in settings.SECRET_KEY_FALLBACKS:
            yield self._session_hash(secret=fallback_secret)


class Organization(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    name = models.CharField(max_length=120)
    created_at = models.DateTimeField(default=now)

    def __str__(self) -> str:
        return self.name


class OrganizationMembership(models.Model):
    class Role(models.TextChoices):
        OWNER = "owner"
        ADMIN = "admin"
        MEMBER = "member"

    organization = models.ForeignKey(
        Organization, on_delete=models.CASCADE, related_name="memberships"
    )
    user = models.ForeignKey(
        User, on_delete=models.CASCADE, related_name="organization_memberships"
    )
    role = models.CharField(max_length=16, choices=Role.choices, default=Role.MEMBER)
    created_at = models.DateTimeField(default=now)

    class Meta:
        constraints: ClassVar = [
            models.UniqueConstraint(
                fields=["organization", "user"], name="one_org_membership_per_user"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.user_id} in {self.organization_id} ({self.role})"


class Plan(models.Model):
    """Limits per workspace. ``None`` means unlimited."""

    code = models.SlugField(primary_key=True, max_length=40)
    name = models.CharField(max_length=80)
    max_connected_accounts = models.PositiveIntegerField(null=True, blank=True)
    max_scheduled_publications_per_month = models.PositiveIntegerField(null=True, blank=True)
    max_discovery_calls_per_month = models.PositiveIntegerField(null=True, blank=True)
    is_paid = models.BooleanField(default=False)

    def __str__(self) -> str:
        return self.code


class Workspace(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    organization = models.ForeignKey(
        Organization, on_delete=models.PROTECT, related_name="workspaces"
    )
    name = models.CharField(max_length=80)
    timezone = models.CharField(max_length=64, default="UTC")
    plan = models.ForeignKey(
        Plan, on_delete=models.PROTECT, default="self_hosted", related_name="+"
    )
    created_at = models.DateTimeField(default=now)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints: ClassVar = [
            models.UniqueConstraint(
                "organization", Lower("name"), name="workspace_name_unique_in_org"
            ),
        ]

    def __str__(self) -> str:
        return self.name


class WorkspaceMembership(models.Model):
    class Role(models.TextChoices):
        ADMIN = "admin"
        EDITOR = "editor"
        VIEWER = "viewer"

    class Status(models.TextChoices):
        ACTIVE = "active"
        INACTIVE = "inactive"

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(User, on_delete=models.CASCADE, related_name="workspace_memberships")
    role = models.CharField(max_length=16, choices=Role.choices, default=Role.EDITOR)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.ACTIVE)
    created_at = models.DateTimeField(default=now)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints: ClassVar = [
            models.UniqueConstraint(fields=["workspace", "user"], name="one_membership_per_user"),
        ]

    def __str__(self) -> str:
        return f"{self.user_id} in {self.workspace_id} ({self.role}, {self.status})"


class Invitation(models.Model):
    """``delivery``: how the current link reached the invitee. ``email``: only to the invitee's
    mailbox, so opening it proves the mailbox; ``manual``: the instance sends no e-mail and an
    administrator passed the link on by hand (rows older than this field were shown to their
    inviter: ``manual`` too)."""

    class Status(models.TextChoices):
        PENDING = "pending"
        ACCEPTED = "accepted"
        REVOKED = "revoked"
        EXPIRED = "expired"

    class Delivery(models.TextChoices):
        EMAIL = "email"
        MANUAL = "manual"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="invitations")
    email = models.EmailField()
    role = models.CharField(max_length=16, choices=WorkspaceMembership.Role.choices)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    token_hash = models.CharField(max_length=64, unique=True)
    invited_by = models.ForeignKey(User, on_delete=models.SET_NULL, null=True, related_name="+")
    created_at = models.DateTimeField(default=now)
    expires_at = models.DateTimeField()
    accepted_at = models.DateTimeField(null=True, blank=True)
    accepted_by = models.ForeignKey(
        User, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    delivery = models.CharField(
        max_length=8, choices=Delivery.choices, default=Delivery.MANUAL, db_default="manual"
    )

    class Meta:
        constraints: ClassVar = [
            models.UniqueConstraint(
                "workspace",
                Lower("email"),
                condition=Q(status="pending"),
                name="one_pending_invitation_per_email",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.email} → {self.workspace_id} ({self.status})"

    @property
    def effective_status(self) -> str:
        if self.status == self.Status.PENDING and self.expires_at <= now():
            return self.Status.EXPIRED
        return self.status


class ApiToken(models.Model):
    """Only the SHA-256 of the secret is stored; the full token is shown once at creation."""

    class Status(models.TextChoices):
        ACTIVE = "active"
        EXPIRED = "expired"
        REVOKED = "revoked"

    PERMISSIONS = ("api:read", "api:write")

    id = models.CharField(primary_key=True, max_length=8)
    user = models.ForeignKey(User, on_delete=models.CASCADE, related_name="api_tokens")
    name = models.CharField(max_length=120)
    secret_hash = models.CharField(max_length=64)
    permissions = models.JSONField(default=list)
    workspace = models.ForeignKey(
        Workspace, on_delete=models.CASCADE, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(default=now)
    expires_at = models.DateTimeField(null=True, blank=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"hrld_{self.id}_… ({self.name})"

    @property
    def status(self) -> str:
        if self.revoked_at is not None:
            return self.Status.REVOKED
        if self.expires_at is not None and self.expires_at <= now():
            return self.Status.EXPIRED
        return self.Status.ACTIVE


class AccessAuditEvent(models.Model):
    """Append-only; keyed by ids (not foreign keys) so rows survive workspace deletion."""

    class Action(models.TextChoices):
        INVITATION_CREATED = "invitation.created"
        INVITATION_RESENT = "invitation.resent"
        INVITATION_REVOKED = "invitation.revoked"
        INVITATION_ACCEPTED = "invitation.accepted"
        MEMBER_ADDED = "member.added"
        MEMBER_ROLE_CHANGED = "member.role_changed"
        MEMBER_DEACTIVATED = "member.deactivated"
        MEMBER_REACTIVATED = "member.reactivated"
        MEMBER_REMOVED = "member.removed"
        REPOST_GRANT_CREATED = "repost_grant.created"
        REPOST_GRANT_REVOKED = "repost_grant.revoked"
        ACCOUNT_EMAIL_VERIFIED = "account.email_verified"
        # A provider told Herald that its user removed Herald's access (Meta's deauthorize
        # callback) or asked for their data to be deleted (Meta's data-deletion callback): the
        # connected account's credentials were erased. The account is named by id.
        CONNECTION_DEAUTHORIZED = "connection.deauthorized"
        CONNECTION_DATA_DELETED = "connection.data_deleted"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    workspace_id = models.UUIDField(db_index=True)
    action = models.CharField(max_length=40, choices=Action.choices)
    actor_user_id = models.CharField(max_length=64, blank=True, default="")
    invitation_id = models.CharField(max_length=64, blank=True, default="")
    previous_role = models.CharField(max_length=16, blank=True, default="")
    previous_status = models.CharField(max_length=16, blank=True, default="")
    role = models.CharField(max_length=16, blank=True, default="")
    status = models.CharField(max_length=16, blank=True, default="")
    subject_email = models.CharField(max_length=254, blank=True, default="")
    subject_user_id = models.CharField(max_length=64, blank=True, default="")
    # The connected account an event is about ("" for the others); kept in the database (the
    # Django admin shows it), not a field of the API's audit items, whose fields the interface
    # fixes. db_default: the previous release inserts events without naming this column.
    subject_account_id = models.CharField(max_length=64, blank=True, default="", db_default="")
    created_at = models.DateTimeField(default=now)

    class Meta:
        indexes: ClassVar = [
            models.Index(fields=["workspace_id", "-created_at", "-id"], name="audit_ws_newest"),
        ]

    def __str__(self) -> str:
        return f"{self.action} in {self.workspace_id}"


class WorkspaceLifecycleRecord(models.Model):
    """Kept when a workspace is deleted (a ``workspace.deleted`` record, docs/decisions/0004-roles-and-access.md)."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    workspace_id = models.UUIDField(db_index=True)
    organization_id = models.UUIDField()
    workspace_name = models.CharField(max_length=80)
    action = models.CharField(max_length=40, default="workspace.deleted")
    actor_user_id = models.CharField(max_length=64)
    created_at = models.DateTimeField(default=now)

    def __str__(self) -> str:
        return f"{self.action} {self.workspace_name}"


class BillingRecord(models.Model):
    """A workspace's subscription history. Survives workspace deletion (workspace kept as id)."""

    class Status(models.TextChoices):
        ACTIVE = "active"
        CANCELED = "canceled"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    organization_id = models.UUIDField(db_index=True)
    workspace_id = models.UUIDField(db_index=True)
    plan_code = models.CharField(max_length=40)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.ACTIVE)
    started_at = models.DateTimeField(default=now)
    ended_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"{self.plan_code} for {self.workspace_id} ({self.status})"


class UsageCounter(models.Model):
    """Per-workspace, per-month usage of plan-limited operations (incremented with F())."""

    workspace = models.ForeignKey(
        Workspace, on_delete=models.CASCADE, related_name="usage_counters"
    )
    metric = models.CharField(max_length=40)
    period_start = models.DateField()
    count = models.PositiveIntegerField(default=0)

    class Meta:
        constraints: ClassVar = [
            models.UniqueConstraint(
                fields=["workspace", "metric", "period_start"], name="one_counter_per_period"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.metric}={self.count} ({self.period_start})"
