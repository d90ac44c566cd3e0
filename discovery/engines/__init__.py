"""Discovery engines behind one interface, chosen by ``HERALD_DISCOVERY_ENGINE``.

An engine has a ``name`` and ``discover(context) -> EngineResult``; it reads only the
``DiscoveryContext`` it is given (no database, no provider) and raises the domain errors of
``config.errors`` (502, 503, 504) when it cannot answer.
"""

from __future__ import annotations

from typing import Protocol

from django.conf import settings

from config.errors import ServiceUnavailableError
from discovery.context import DiscoveryContext, EngineResult


class DiscoveryEngine(Protocol):
    name: str
    time_budget_seconds: float  # the longest a call may take (bounds the in-flight slot)

    def discover(self, context: DiscoveryContext) -> EngineResult: ...


def get_engine() -> DiscoveryEngine:
    choice = getattr(settings, "HERALD_DISCOVERY_ENGINE", "builtin") or "builtin"
    if choice not in ("builtin", "llm"):
        raise ServiceUnavailableError(
            f"Unknown discovery engine {str(choice)[:40]!r} (HERALD_DISCOVERY_ENGINE).",
            code="discovery_unavailable",
        )
    if choice == "llm":
        from discovery.engines.llm import LlmEngine

        engine = LlmEngine(
            url=str(getattr(settings, "HERALD_DISCOVERY_LLM_URL", "") or ""),
            model=str(getattr(settings, "HERALD_DISCOVERY_LLM_MODEL", "") or ""),
            api_key=str(getattr(settings, "HERALD_DISCOVERY_LLM_API_KEY", "") or ""),
            timeout=float(getattr(settings, "HERALD_DISCOVERY_LLM_TIMEOUT_SECONDS", 30.0)),
        )
        engine.check_configured()  # before the call is admitted and counted
        return engine
    from discovery.engines.builtin import BuiltinEngine

    return BuiltinEngine()


__all__ = ["DiscoveryEngine", "get_engine"]
