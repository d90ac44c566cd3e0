"""Plain-text tables and JSON output: the one place the CLI writes to the terminal.

Every human-readable line goes through :func:`echo`, which escapes the control characters a
server could smuggle into a publication text, an account name or a problem detail (ESC starting
CSI/OSC sequences such as OSC 52 clipboard writes or OSC 8 links, BEL, CR, the C1 range, DEL), so
nothing the server says can drive the terminal, and the format characters that change what a
person reads without showing themselves (bidi overrides and isolates, zero-width characters,
line and paragraph separators). ``--json`` output (:func:`emit_json`) stays exact JSON, with
those characters written as ``\\u`` escapes. ``tests/cli/test_cli_control_chars.py``
also checks that nothing in ``cli/`` calls ``click.echo`` except this module.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Sequence
from typing import Any

import click

# Unicode categories never written raw: controls (C0 but newline and tab, DEL, C1), format
# characters (bidi overrides and isolates, zero-width characters, the BOM: they reorder or hide
# what a person reads), line and paragraph separators, and lone surrogates (unencodable).
_ESCAPED_CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp", "Cs"})
# Candidates for the category check: everything but printable ASCII, newline and tab.
_CANDIDATE = re.compile("[^\t\n\x20-\x7e]")


def _escaped(char: str) -> bool:
    return unicodedata.category(char) in _ESCAPED_CATEGORIES


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    if not _escaped(char):
        return char
    code = ord(char)
    if code < 0x80:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def _json_escape(match: re.Match[str]) -> str:
    char = match.group()
    if not _escaped(char):
        return char
    # JSON spells a character outside the BMP as its UTF-16 surrogate pair.
    units = char.encode("utf-16-be", "surrogatepass")
    return "".join(f"\\u{int.from_bytes(units[i : i + 2]):04x}" for i in range(0, len(units), 2))


def printable(text: Any) -> str:
    """``text`` with every control, format (bidi, zero-width) and separator character but
    newline and tab written as ``\\x1b`` / ``\\u202e``; safe to write to a terminal."""
    return _CANDIDATE.sub(_escape, str(text))


def echo(message: Any = "", *, err: bool = False, nl: bool = True) -> None:
    """``click.echo`` for human-readable output, with control characters escaped."""
    click.echo(printable(message), err=err, nl=nl)


def clear_line(*, err: bool = False) -> None:
    """Erase the current terminal line (the CLI's own live progress line)."""
    click.echo("\r\x1b[2K", nl=False, err=err)


def json_text(data: Any) -> str:
    """Exact JSON in which every character :func:`printable` escapes is a ``\\u`` escape (json
    already escapes C0; outside strings there is only ASCII)."""
    return _CANDIDATE.sub(_json_escape, json.dumps(data, indent=2, ensure_ascii=False))


def emit_json(data: Any) -> None:
    click.echo(json_text(data))


def shorten(text: Any, width: int) -> str:
    value = " ".join(str(text if text is not None else "").split())
    return value if len(value) <= width else value[: max(width - 1, 0)] + "…"


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A left-aligned text table with a header row; empty cells read ``-``; a cell's control
    characters are escaped first so that the columns line up."""
    cells = [[str(h) for h in headers]] + [
        [("-" if value in (None, "") else _cell(value)) for value in row] for row in rows
    ]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    lines = [
        "  ".join(value.ljust(widths[i]) for i, value in enumerate(row)).rstrip() for row in cells
    ]
    return "\n".join(lines)


def echo_table(headers: Sequence[str], rows: Sequence[Sequence[Any]], empty: str) -> None:
    echo(table(headers, rows) if rows else empty)


def _cell(value: Any) -> str:
    return printable(str(value).replace("\n", " ").replace("\t", " "))


def fields(pairs: Sequence[tuple[str, Any]]) -> str:
    """``label  value`` lines with aligned values."""
    width = max((len(label) for label, _ in pairs), default=0)
    return "\n".join(f"{label.ljust(width)}  {value}" for label, value in pairs)
