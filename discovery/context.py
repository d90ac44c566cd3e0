"""What a discovery engine works from: plain, immutable values (no models, no database).

``discovery.selectors.discovery_context`` builds one from a workspace; engines only read it, so
the built-in engine is a pure function of it and the LLM engine serializes it into a prompt.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Any


@dataclass(frozen=True)
class PlatformFormat:
    """One publishable format of a platform, from the adapter's capability metadata."""

    key: str  # e.g. "mastodon.post"
    text_limit: int
    counting_rule: str  # e.g. "characters", "graphemes"
    text_required: bool
    media_max_count: int
    media_types: tuple[str, ...]  # MIME types
    media_required: bool


@dataclass(frozen=True)
class DeliveryStats:
    """How the workspace's recent deliveries to one platform went."""

    published: int = 0
    failed: int = 0
    pending: int = 0  # scheduled, queued, retrying, ambiguous or blocked
    last_error_kind: str = ""
    last_published_at: datetime | None = None


@dataclass(frozen=True)
class PlatformInfo:
    provider: str
    display_name: str
    formats: tuple[PlatformFormat, ...]
    connected_accounts: int
    deliveries: DeliveryStats


@dataclass(frozen=True)
class Outcome:
    provider: str
    status: str  # destination status
    error_kind: str = ""


@dataclass(frozen=True)
class Engagement:
    likes: int = 0
    comments: int = 0
    reposts: int = 0
    views: int = 0

    @property
    def interactions(self) -> int:
        return self.likes + self.comments + self.reposts


@dataclass(frozen=True)
class PastPublication:
    id: str
    text: str
    created_at: datetime
    status: str
    outcomes: tuple[Outcome, ...]
    engagement: Engagement | None = None  # where known


@dataclass(frozen=True)
class Voice:
    """The effective voice profile (its cleaned definition: every member present)."""

    profile_id: str
    name: str
    definition: dict[str, Any]
    updated_at: datetime

    def items(self, member: str) -> list[Any]:
        value = self.definition.get(member) or []
        return list(value) if isinstance(value, list) else []

    def text(self, member: str) -> str:
        value = self.definition.get(member) or ""
        return value if isinstance(value, str) else ""


@dataclass(frozen=True)
class DiscoveryContext:
    workspace_id: str
    workspace_name: str
    today: date
    platforms: tuple[PlatformInfo, ...]  # in the order requested
    limit: int
    focus: str = ""
    audience: str = ""
    voice: Voice | None = None
    publications: tuple[PastPublication, ...] = field(default_factory=tuple)  # newest first

    @property
    def forbidden_phrases(self) -> list[str]:
        return [p for p in (self.voice.items("forbidden_phrases") if self.voice else []) if p]


@dataclass(frozen=True)
class EngineResult:
    model: str  # names the engine and its version (or the upstream model)
    opportunities: list[dict[str, Any]]  # Opportunity objects, ids included
