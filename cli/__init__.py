"""The ``herald`` command and the tool interface for AI agents.

An HTTP client of a running Herald instance (click + requests). It never imports Django: every
command and every tool goes through the one API client in :mod:`cli.client`.
"""

from __future__ import annotations

from importlib import metadata


def cli_version() -> str:
    try:
        return metadata.version("herald")
    except metadata.PackageNotFoundError:  # pragma: no cover - running from a bare checkout
        return "0+unknown"
