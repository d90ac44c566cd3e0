"""The one small interface every provider adapter implements.

An adapter says what is implemented (capability metadata) and how to talk to the provider. It
never decides whether an operation may run now: that is the readiness service's job, asked by
the delivery code before every provider call.

Adapters are plain Python: no Django models, no database (the built-in feed's entries are
publishing's rows, reached through ``providers.feed.FEED_ENTRIES``). They receive decrypted
credentials and return plain values; the publishing services persist them (credentials
encrypted).
"""

from __future__ import annotations

import abc
import enum
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import IO, Any


class ConnectionMode(enum.StrEnum):
    OAUTH2 = "oauth2"  # authorization-code flow; PKCE where the provider supports it
    CREDENTIALS = "credentials"  # e.g. handle + app password, bot token
    WEBHOOK = "webhook"  # an incoming-webhook URL


@dataclass(frozen=True)
class MediaRule:
    max_count: int
    mime_types: tuple[str, ...]
    max_bytes: int
    required: bool = False  # a post must carry at least one item
    # The network fetches each item from its URL (Meta): a server without a public origin
    # (HERALD_PUBLIC_URL or S3 storage) cannot send media there, and a publication is refused
    # when it is created (publishing.services.publications).
    by_url: bool = False
    # All the items of one post together (Discord's 25 MiB per webhook message); 0: no limit.
    max_total_bytes: int = 0


@dataclass(frozen=True)
class VideoRule:
    """A network's documented video limits for one format, checked when a publication is
    created and again when it is scheduled (``publishing.services.video_rules``).

    ``delivers`` is False while Herald cannot send video to the network yet: a video is then
    refused at create time, the limits still say what the network takes. A limit of 0 is none.
    """

    network: str  # the short name messages start with ("X", "Bluesky")
    delivers: bool
    containers: tuple[str, ...] = ("mp4", "mov")
    video_codecs: tuple[str, ...] = ("h264",)
    audio_codecs: tuple[str, ...] = ("aac",)
    max_bytes: int = 0
    min_bytes: int = 0  # the smallest file the network takes (LinkedIn's 75 KB)
    min_seconds: float = 0
    max_seconds: float = 0
    min_side: int = 0  # pixels, the shorter side
    max_width: int = 0
    max_height: int = 0
    min_aspect: float = 0  # width / height, e.g. 1/3
    max_aspect: float = 0
    min_frame_rate: float = 0
    max_frame_rate: float = 0
    max_count: int = 1  # videos per post
    mixes_with_images: bool = False
    source: str = ""  # where the limits are documented


@dataclass(frozen=True)
class OptionSpec:
    """One destination option (e.g. Mastodon ``visibility``, Telegram ``chat_id``)."""

    name: str
    required: bool = False
    choices: tuple[str, ...] = ()  # empty: free text (or chosen from destination options)
    max_length: int = 200
    default: str | None = None
    forbidden: str = ""  # characters the network refuses in the value (YouTube: "<>")


@dataclass(frozen=True)
class OutputProfile:
    """One publishable format, e.g. ``mastodon.post``."""

    key: str
    text_limit: int
    text_counter: Callable[[str], int]  # the provider's own counting rule
    text_required: bool = False
    media: MediaRule = MediaRule(max_count=0, mime_types=(), max_bytes=0)
    video: VideoRule | None = None  # None: the network takes no video in this format
    options: tuple[OptionSpec, ...] = ()
    counting_rule: str = "characters"  # human description, e.g. "graphemes"
    # Rules on the text beyond its length (Instagram's 30 hashtags): the problems found, in
    # words; checked at create time and before the send.
    text_rules: Callable[[str], list[str]] | None = None
    # (lowest, highest) width / height of an image, when the format bounds it (Instagram's
    # feed: 4:5 to 1.91:1); checked at create time against the stored image's size.
    image_aspect: tuple[float, float] | None = None
    text_forbidden: str = ""  # characters the network refuses in the text (YouTube: "<>")
    # Rules over the media's types (in order) and the options together (YouTube: one video,
    # an image only as its thumbnail; the tags' total length): ``(where, problem)`` pairs, where
    # is ``"media"`` or an option's name; checked at create time and before the send.
    content_rules: Callable[[list[str], dict[str, str]], list[tuple[str, str]]] | None = None


@dataclass(frozen=True)
class Capabilities:
    provider: str  # e.g. "mastodon"
    display_name: str
    connection: ConnectionMode
    federated: bool = False  # has a per-account server instance
    pkce: bool = False
    required_scopes: tuple[str, ...] = ()
    profiles: tuple[OutputProfile, ...] = ()
    account_kind: str = "user"  # default account kind of connected accounts
    credential_fields: tuple[str, ...] = ()  # inputs of a credentials/webhook connect
    supports_refresh: bool = False
    supports_revoke: bool = False
    supports_metrics: bool = False
    supports_repost: bool = False
    supports_destination_options: bool = False

    def profile(self, key: str) -> OutputProfile | None:
        return next((p for p in self.profiles if p.key == key), None)


# --- Values crossing the adapter boundary ---------------------------------------------------


@dataclass
class AccountContext:
    """What an adapter needs to act as one connected account."""

    external_id: str
    credentials: dict[str, str]  # decrypted; never logged or returned to API callers
    instance_url: str = ""  # federated server or API base chosen at connect time
    app: dict[str, str] = field(default_factory=dict)  # per-instance app registration (decrypted)
    username: str = ""
    # Called when an adapter had to rotate tokens in the middle of an operation (e.g. Bluesky
    # refreshSession after ExpiredToken). The caller must persist the new credentials (encrypted);
    # the adapter has also updated ``credentials`` in place.
    on_credentials_changed: Callable[[dict[str, str]], None] | None = None


@dataclass
class ConnectedAccount:
    """The result of a successful connect or refresh."""

    external_id: str
    username: str
    credentials: dict[str, str]
    display_name: str = ""
    avatar_url: str = ""
    instance_url: str = ""
    account_kind: str = "user"
    granted_scopes: tuple[str, ...] = ()
    expires_at: datetime | None = None
    # The account's public page on its provider (a Mastodon or Bluesky profile, a public
    # Telegram chat, the feed's Atom URL); empty when there is none.
    profile_url: str = ""


@dataclass
class Candidate:
    """One account a login can connect (a Facebook Page, an Instagram account linked to it):
    the person chooses which become Herald accounts, each of ``provider``."""

    provider: str
    account: ConnectedAccount
    label: str = ""  # how the choice is shown ("Facebook Page Herald HQ")

    @property
    def key(self) -> str:
        return f"{self.provider}:{self.account.external_id}"


@dataclass
class ConnectionCandidates:
    """What :meth:`ProviderAdapter.complete_authorization` answers when one grant reaches
    several accounts (Meta's Facebook Login): nothing is connected until the person chooses."""

    candidates: list[Candidate]


@dataclass
class AuthorizationStart:
    """First leg of an OAuth connect: send the user to ``authorization_url``."""

    authorization_url: str
    code_verifier: str = ""
    app: dict[str, str] = field(default_factory=dict)  # e.g. a freshly registered client


@dataclass
class MediaItem:
    name: str
    mime_type: str
    size: int
    open: Callable[[], IO[bytes]]  # opens the stored file for reading
    alt_text: str = ""
    media_id: str = ""  # Herald's Media id (the built-in feed serves the file itself)
    # Opens the poster frame Herald took from a probed video (JPEG, at most 1280 px a side);
    # None for other media.
    poster: Callable[[], IO[bytes]] | None = None
    # Where a receiver outside Herald can fetch it (the media API's ``url``: object storage or
    # HERALD_PUBLIC_URL + path); "" when no absolute address is known. For adapters that send
    # links instead of bytes (the generic ``webhook``).
    url: str = ""
    # What the media probe learnt of a video (``Media.probe``: container, codecs,
    # duration_seconds, width, height, rotation, frame_rate, ...); empty for an image.
    probe: dict[str, Any] = field(default_factory=dict)

    def display_size(self) -> tuple[int, int] | None:
        """The video's width and height as a player shows it (turned by its rotation), from
        the probe's facts; None when the probe did not record them."""
        width, height = int(self.probe.get("width") or 0), int(self.probe.get("height") or 0)
        if not width or not height:
            return None
        turned = int(self.probe.get("rotation") or 0) % 180 == 90
        return (height, width) if turned else (width, height)

    def duration_seconds(self) -> float | None:
        """The video's length from the probe's facts, None when unknown."""
        value = self.probe.get("duration_seconds")
        return float(value) if isinstance(value, int | float) and value > 0 else None


@dataclass
class PublishRequest:
    profile: str
    text: str
    idempotency_key: str  # stable per destination: the same key on every attempt
    media: list[MediaItem] = field(default_factory=list)
    options: dict[str, str] = field(default_factory=dict)
    # When the first attempt with this idempotency key was sent (UTC). Reconcile uses it to know
    # whether provider-side idempotency (Mastodon keeps keys 1 h) still covers a re-send, and to
    # bound the search window.
    first_attempt_at: datetime | None = None
    # The publication this destination belongs to, for adapters that describe it to a receiver
    # (the generic ``webhook``): its ID, creation time and schedule (UTC; None = publish now).
    publication_id: str = ""
    created_at: datetime | None = None
    scheduled_at: datetime | None = None
    # The last state a long send answered (:class:`Pending`), kept while the destination is
    # ambiguous: reconcile can ask about the provider's own ids (Instagram's container).
    send_state: dict[str, Any] = field(default_factory=dict)


@dataclass
class PublishResult:
    external_id: str
    external_url: str = ""


@dataclass(frozen=True)
class Pending:
    """A publish that is not finished yet: the provider is still taking or processing the media
    (docs/decisions/0020-long-sends.md). The delivery engine stores ``state`` on the destination,
    gives the worker thread back, and calls :meth:`ProviderAdapter.resume` with it after
    ``check_after_seconds``.

    ``stage`` is one of :data:`PENDING_STAGES`; ``state`` is a small JSON-able dict of the
    provider's own ids (media ids, container ids, upload offsets), never a secret."""

    stage: str
    state: dict[str, Any]
    check_after_seconds: float = 5.0
    # Why a send in stage ``waiting`` waits (e.g. ``publishing_limit``: the account's posts per
    # rolling 24 hours are spent); recorded in the stage's event.
    reason: str = ""


# ``waiting``: the provider cannot take the post yet (a publishing limit) and nothing is being
# processed; the adapter bounds that wait itself (the processing bound does not apply to it).
PENDING_STAGES = ("uploading", "processing", "publishing", "waiting")


@dataclass
class Metrics:
    likes: int = 0
    comments: int = 0
    reposts: int = 0
    views: int = 0
    # Read where the network reports them (Instagram's insights); not repost gates.
    reach: int = 0  # unique accounts that saw the post
    saves: int = 0


# --- Errors ---------------------------------------------------------------------------------


class ErrorKind(enum.StrEnum):
    TRANSIENT = "transient"  # 5xx, connection refused before sending: safe to retry
    RATE_LIMITED = "rate_limited"  # 429; ``retry_after`` seconds when the provider said so
    AMBIGUOUS = "ambiguous"  # the request may have been accepted (timeout after sending)
    AUTH = "auth"  # grant invalid or revoked: the user must reconnect
    PERMANENT = "permanent"  # the provider refused this content or request


class ProviderError(Exception):
    """A sanitized provider failure: the message never carries tokens, URLs with secrets or
    raw response bodies."""

    def __init__(
        self,
        kind: ErrorKind,
        message: str,
        *,
        retry_after: float | None = None,
        status: int | None = None,
        host_wide: bool = True,
        wait_reason: str = "",
    ) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.retry_after = retry_after
        self.status = status
        # Whether a rate limit or a wait said here holds for every account on the provider's
        # host (the delivery engine then pauses the host), or only for this account (its own
        # sends wait; other accounts on the host go on): Meta's per-Page limits.
        self.host_wide = host_wide
        # A wait the network imposes until a known time (``retry_after`` seconds), e.g.
        # YouTube's ``quota_exhausted`` until its quota day resets: the send waits that long
        # (not capped like a Retry-After), and the wait is not counted as an attempt.
        self.wait_reason = wait_reason

    @property
    def action(self) -> str:
        return {
            ErrorKind.AUTH: "reconnect",
            ErrorKind.PERMANENT: "edit",
            ErrorKind.TRANSIENT: "retry",
            ErrorKind.RATE_LIMITED: "retry",
            ErrorKind.AMBIGUOUS: "contact_support",
        }[self.kind]


class ProviderInputError(ProviderError):
    """A value the user supplied failed the adapter's own checks, before any provider call (a
    malformed webhook URL or bot token, a non-https or private instance URL). ``field`` names
    it: a credential field (``webhook_url``, ``bot_token``...) or ``instance_url``. The API
    answers 422 at that field, not 502: the provider was never asked. The message is fixed
    text and never carries the value (it may be a secret)."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(ErrorKind.PERMANENT, message)
        self.field = field


class NotSupported(ProviderError):
    def __init__(self, what: str) -> None:
        super().__init__(ErrorKind.PERMANENT, f"{what} is not implemented for this provider.")


# --- The adapter ----------------------------------------------------------------------------


class ProviderAdapter(abc.ABC):
    capabilities: Capabilities

    # Connect -----------------------------------------------------------------------------
    def begin_authorization(
        self,
        *,
        redirect_uri: str,
        state: str,
        instance_url: str = "",
        app: dict[str, str] | None = None,
    ) -> AuthorizationStart:
        raise NotSupported("OAuth connect")

    def complete_authorization(
        self,
        *,
        code: str,
        redirect_uri: str,
        code_verifier: str,
        instance_url: str = "",
        app: dict[str, str] | None = None,
    ) -> ConnectedAccount | ConnectionCandidates:
        """The grant as one account, or the candidates the person chooses from."""
        raise NotSupported("OAuth connect")

    def account_required_scopes(self, *, instance_url: str) -> tuple[str, ...] | None:
        """The scopes an account connected at ``instance_url`` must have granted, when its
        connection asks for other scopes than ``capabilities.required_scopes`` (Instagram's own
        login); ``None``: the capabilities' (readiness's authorization fact)."""
        return None

    def connection_mode_instance(self, mode: str) -> str | None:
        """The ``instance_url`` an OAuth connect in connection mode ``mode`` uses (Instagram's
        ``instagram_login``: the Instagram API base), passed to :meth:`begin_authorization`
        and :meth:`complete_authorization`; ``None`` when the provider has no such mode."""
        return None

    def connect_with_credentials(self, *, fields: dict[str, str]) -> ConnectedAccount:
        raise NotSupported("Credential connect")

    def refresh(self, *, account: AccountContext) -> ConnectedAccount:
        raise NotSupported("Refresh")

    def can_refresh(self, *, credentials: dict[str, str]) -> bool:
        """Whether an account with these credentials can get a new token without the user
        (token lifecycle). An adapter whose grants sometimes come without a refresh token (e.g.
        LinkedIn for most apps) says so here; such an account is asked to reconnect
        ``HERALD_RECONNECT_WARNING_DAYS`` before its token expires."""
        return self.capabilities.supports_refresh

    def revoke(self, *, account: AccountContext) -> None:
        raise NotSupported("Revoke")

    # Publish -----------------------------------------------------------------------------
    @abc.abstractmethod
    def publish(
        self, *, account: AccountContext, request: PublishRequest
    ) -> PublishResult | Pending:
        """Send ``request``. A long send (a video the provider processes) answers
        :class:`Pending` instead of waiting; the engine calls :meth:`resume` later."""

    def resume(
        self, *, account: AccountContext, request: PublishRequest, state: dict[str, Any]
    ) -> PublishResult | Pending:
        """Go on with a send that answered :class:`Pending` (``state`` is what it answered):
        the post, or :class:`Pending` again while the provider is not done."""
        raise NotSupported("Resuming a send")

    def reconcile(
        self, *, account: AccountContext, request: PublishRequest, external_id: str = ""
    ) -> PublishResult | Pending | None:
        """Find a post sent earlier with ``request.idempotency_key`` (or ``external_id``).

        ``None`` means the provider has no such post: it is safe to send again. ``Pending``
        means the post does not exist yet but the send can go on from where it was (an upload
        session the provider still holds, ``request.send_state``): the engine resumes it rather
        than starting over.
        """
        raise NotSupported("Reconcile")

    def delete(self, *, account: AccountContext, external_id: str) -> None:
        """Remove the published post ``external_id``. Safe to repeat: deleting a post that is
        already gone succeeds."""
        raise NotSupported("Delete")

    # Reads ---------------------------------------------------------------------------------
    def destination_options(
        self, *, account: AccountContext, region_code: str = "US", language: str = "en"
    ) -> dict[str, list[dict[str, str]]]:
        return {}

    def metrics(self, *, account: AccountContext, external_id: str) -> Metrics:
        raise NotSupported("Metrics")

    # Repost (used by repost automation) --------------------------------------------------------
    # The post is named by ``external_id`` (its id as the target account's server knows it) or,
    # when that server cannot know the id (another Mastodon instance), by ``source_url``.
    def repost(
        self,
        *,
        account: AccountContext,
        external_id: str,
        source_url: str = "",
        idempotency_key: str = "",
    ) -> PublishResult:
        """Repost the post from ``account``; ``PublishResult.external_id`` is the repost's id.

        Safe to repeat: when ``account`` already has a live repost of the post, that repost is
        returned and no second one is made. ``idempotency_key`` names this repost (one per
        stage of a repost execution) for providers whose repost is a record of its own.
        """
        raise NotSupported("Repost")

    def find_repost(
        self,
        *,
        account: AccountContext,
        external_id: str,
        source_url: str = "",
        idempotency_key: str = "",
    ) -> PublishResult | None:
        """Reconcile an earlier :meth:`repost` whose outcome is unknown (the worker died after
        the call): the live repost of the post by ``account``, or ``None`` when there is none.
        ``PublishResult.external_id`` may be empty when the provider confirms the repost but
        cannot name it."""
        raise NotSupported("Repost lookup")

    def unrepost(
        self,
        *,
        account: AccountContext,
        repost_id: str,
        external_id: str = "",
        source_url: str = "",
    ) -> None:
        """Remove ``account``'s repost (``repost_id``, or its repost of the post). Safe to
        repeat: removing a repost that is already gone succeeds."""
        raise NotSupported("Unrepost")


def can_repost(adapter: ProviderAdapter) -> bool:
    """The adapter implements repost, its reconciliation and unrepost (repost automation)."""
    cls = type(adapter)
    return bool(
        adapter.capabilities.supports_repost
        and cls.repost is not ProviderAdapter.repost
        and cls.find_repost is not ProviderAdapter.find_repost
        and cls.unrepost is not ProviderAdapter.unrepost
    )


def describe_video(rule: VideoRule | None) -> dict[str, Any]:
    """A format's video rules as plain JSON; ``supported`` is False when Herald cannot send
    video there (yet, or ever); limits of 0 or null are none."""
    if rule is None:
        return {"supported": False, "network_accepts_video": False}
    return {
        "supported": rule.delivers,
        "network_accepts_video": True,
        "containers": list(rule.containers),
        "video_codecs": list(rule.video_codecs),
        "audio_codecs": list(rule.audio_codecs),
        "max_bytes": rule.max_bytes or None,
        "min_bytes": rule.min_bytes or None,
        "min_seconds": rule.min_seconds or None,
        "max_seconds": rule.max_seconds or None,
        "min_side": rule.min_side or None,
        "max_width": rule.max_width or None,
        "max_height": rule.max_height or None,
        "min_aspect_ratio": rule.min_aspect or None,
        "max_aspect_ratio": rule.max_aspect or None,
        "min_frame_rate": rule.min_frame_rate or None,
        "max_frame_rate": rule.max_frame_rate or None,
        "max_count": rule.max_count,
        "mixes_with_images": rule.mixes_with_images,
        "source": rule.source,
    }


def _describe_option(option: OptionSpec) -> dict[str, Any]:
    described: dict[str, Any] = {
        "name": option.name,
        "required": option.required,
        "choices": list(option.choices),
        "default": option.default,
    }
    if option.forbidden:
        described["forbidden"] = option.forbidden
    return described


def describe(adapter: ProviderAdapter) -> dict[str, Any]:
    """Capability metadata as plain JSON (catalogue and capability resolution)."""
    return describe_capabilities(adapter.capabilities)


def describe_capabilities(caps: Capabilities) -> dict[str, Any]:
    """``describe`` of the adapter whose capability metadata this is (readiness's contract
    digest describes the capabilities it decided over)."""
    return {
        "provider": caps.provider,
        "display_name": caps.display_name,
        "connection": caps.connection.value,
        "federated": caps.federated,
        "pkce": caps.pkce,
        "required_scopes": list(caps.required_scopes),
        "credential_fields": list(caps.credential_fields),
        "supports": {
            "refresh": caps.supports_refresh,
            "revoke": caps.supports_revoke,
            "metrics": caps.supports_metrics,
            "repost": caps.supports_repost,
            "destination_options": caps.supports_destination_options,
        },
        "profiles": [
            {
                "key": p.key,
                "text_limit": p.text_limit,
                "counting_rule": p.counting_rule,
                "text_required": p.text_required,
                "media": {
                    "max_count": p.media.max_count,
                    "mime_types": list(p.media.mime_types),
                    "max_bytes": p.media.max_bytes,
                    "max_total_bytes": p.media.max_total_bytes or None,
                    "required": p.media.required,
                },
                "video": describe_video(p.video),
                "options": [_describe_option(o) for o in p.options],
                # Only where a network refuses characters, so other networks' descriptions
                # (and readiness's contract digests of them) stay as they were.
                **({"text_forbidden": p.text_forbidden} if p.text_forbidden else {}),
            }
            for p in caps.profiles
        ],
    }
