"""Plain-text tables and JSON output."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import click


def emit_json(data: Any) -> None:
    click.echo(json.dumps(data, indent=2, ensure_ascii=False))


def shorten(text: Any, width: int) -> str:
    value = " ".join(str(text if text is not None else "").split())
    return value if len(value) <= width else value[: max(width - 1, 0)] + "…"


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A left-aligned text table with a header row; empty cells read ``-``."""
    cells = [[str(h) for h in headers]] + [
        [("-" if value in (None, "") else str(value)) for value in row] for row in rows
    ]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    lines = [
        "  ".join(value.ljust(widths[i]) for i, value in enumerate(row)).rstrip() for row in cells
    ]
    return "\n".join(lines)


def echo_table(headers: Sequence[str], rows: Sequence[Sequence[Any]], empty: str) -> None:
    click.echo(table(headers, rows) if rows else empty)


def fields(pairs: Sequence[tuple[str, Any]]) -> str:
    """``label  value`` lines with aligned values."""
    width = max((len(label) for label, _ in pairs), default=0)
    return "\n".join(f"{label.ljust(width)}  {value}" for label, value in pairs)
