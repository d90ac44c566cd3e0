"""The one registry of Herald's extension points: how a lower layer reaches a higher one.

No layer imports a layer above it (``[tool.importlinter]``), so when a lower app needs something
only a higher one has, it declares a key here and the higher app registers its value from its
``AppConfig.ready()``. The set of keys is closed: ``KEYS`` names every one, a key is declared
once (with its value type, where that type lives) and filled only through it. Registering under
an unknown key, declaring a key twice, filling a single-valued key twice or adding the same hook
twice fails at start-up; reading a required key nobody filled raises ``ImproperlyConfigured``
naming the key. Why one registry: ``docs/decisions/0019-one-registry-and-providers-layer.md``.
"""

from __future__ import annotations

from typing import Generic, TypeVar, cast

from django.core.exceptions import ImproperlyConfigured

T = TypeVar("T")

# Every key, named after the package that declares it: what it holds, one value or many, and the
# apps that fill it. docs/architecture.md lists them with their types.
KEYS: dict[str, str] = {
    "config.readiness_checks": "what else /api/v1/ready checks (many: publishing)",
    "workspaces.data_summary": "what each app would delete with a workspace (many: publishing, "
    "voice, reposts)",
    "workspaces.blocker_check": "what keeps a workspace from being deleted (many: publishing)",
    "workspaces.created": "what runs inside workspace_create's transaction (many: voice)",
    "providers.feed_entries": "where the built-in feed stores its entries (one: publishing)",
    "providers.quota_ledger": "where a network's daily API quota is counted (one: publishing)",
    "readiness.accounts": "the accounts and OAuth apps readiness reads (one: publishing)",
    "publishing.voice_override": "where a publication's voice override is stored (one: voice)",
}

_values: dict[str, list[object]] = {name: [] for name in KEYS}
_declared: set[str] = set()


class RegistryError(ImproperlyConfigured):
    """A key used against the rules above: a programming error, raised at start-up."""


class _Key(Generic[T]):
    def __init__(self, name: str) -> None:
        if name not in KEYS:
            raise RegistryError(f"Unknown registry key {name!r}: add it to config.registry.KEYS.")
        if name in _declared:
            raise RegistryError(f"Registry key {name!r} is declared twice.")
        _declared.add(name)
        self.name = name

    def _stored(self) -> list[T]:
        return cast(list[T], _values[self.name])

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"


class One(_Key[T]):
    """A key that holds exactly one value (an implementation of a protocol)."""

    def register(self, value: T) -> None:
        if self._stored():
            raise RegistryError(f"Registry key {self.name!r} is already filled.")
        self._stored().append(value)

    def get(self) -> T:
        stored = self._stored()
        if not stored:
            raise ImproperlyConfigured(
                f"Nothing is registered under {self.name!r} ({KEYS[self.name]}): "
                "is the app that registers it in INSTALLED_APPS?"
            )
        return stored[0]


class Many(_Key[T]):
    """A key that holds any number of hooks, called in the order they were registered."""

    def register(self, value: T) -> None:
        if value in self._stored():
            raise RegistryError(f"{value!r} is registered twice under {self.name!r}.")
        self._stored().append(value)

    def all(self) -> tuple[T, ...]:
        return tuple(self._stored())


def filled() -> dict[str, int]:
    """How many values each key holds (the tests check that start-up filled every key)."""
    return {name: len(values) for name, values in _values.items()}
