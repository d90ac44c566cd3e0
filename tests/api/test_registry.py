"""The one registry of extension points (config/registry.py): a closed set of keys, each filled
at start-up by the app that implements it, misuse failing loudly."""

from __future__ import annotations

import re

import pytest
from django.core.exceptions import ImproperlyConfigured

from config import registry
from config.registry import Many, One, RegistryError


@pytest.fixture
def spare_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two keys that exist only for the test (the real ones are all declared and filled)."""
    for name in ("tests.one", "tests.many"):
        monkeypatch.setitem(registry.KEYS, name, "a key of this test")
        monkeypatch.setitem(registry._values, name, [])
    monkeypatch.setattr(registry, "_declared", set(registry._declared))


def test_every_key_is_declared_and_filled_once_the_apps_are_ready() -> None:
    assert registry._declared == set(registry.KEYS)
    assert registry.filled() == {
        "config.readiness_checks": 1,  # publishing (credentials)
        "workspaces.data_summary": 3,  # publishing, voice, reposts
        "workspaces.blocker_check": 1,  # publishing
        "workspaces.created": 1,  # voice
        "providers.feed_entries": 1,  # publishing
        "readiness.accounts": 1,  # publishing
        "publishing.voice_override": 1,  # voice
        "providers.quota_ledger": 1,  # publishing (provider quota days)
    }


def test_an_unknown_key_cannot_be_declared() -> None:
    with pytest.raises(RegistryError, match=re.escape("Unknown registry key 'nowhere.hook'")):
        Many[object]("nowhere.hook")


def test_a_real_key_cannot_be_declared_again() -> None:
    with pytest.raises(RegistryError, match=re.escape("'readiness.accounts' is declared twice")):
        One[object]("readiness.accounts")


@pytest.mark.usefixtures("spare_keys")
def test_a_single_valued_key_is_filled_once_and_read_back() -> None:
    key = One[str]("tests.one")
    with pytest.raises(
        ImproperlyConfigured, match=re.escape("Nothing is registered under 'tests.one'")
    ):
        key.get()
    key.register("first")
    with pytest.raises(RegistryError, match=re.escape("'tests.one' is already filled")):
        key.register("second")
    assert key.get() == "first"


@pytest.mark.usefixtures("spare_keys")
def test_a_many_valued_key_keeps_its_hooks_in_order_and_refuses_one_twice() -> None:
    key = Many[str]("tests.many")
    assert key.all() == ()
    key.register("a")
    key.register("b")
    with pytest.raises(RegistryError, match=re.escape("registered twice under 'tests.many'")):
        key.register("a")
    assert key.all() == ("a", "b")
