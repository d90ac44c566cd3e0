"""The configuration tables of docs/operations.md against the code that reads the environment.

Every variable the settings read (``config/``, through the ``env_*`` helpers of ``config/env.py``
or ``os.environ``), and every one ``make run`` (``scripts/run.py``) and the container's gunicorn
(``docker/gunicorn.conf.py``) read, has a row; every row names a variable that something reads.
A setting added without its row, or a row left behind by a removed setting, fails here.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OPERATIONS = ROOT / "docs" / "operations.md"
NAME = re.compile(r"`([A-Z][A-Z0-9_]*)`")

# Read by a library from the process environment, not by Herald's code.
READ_BY_LIBRARIES = {
    "FORWARDED_ALLOW_IPS": "gunicorn (docker/gunicorn.conf.py explains it)",
}


def _env_helpers() -> set[str]:
    """The reading functions of config/env.py (``env_str``, ``env_int``, …)."""
    tree = ast.parse((ROOT / "config" / "env.py").read_text(encoding="utf-8"))
    helpers = {
        node.name
        for node in tree.body
        if isinstance(node, ast.FunctionDef) and node.name.startswith("env_")
    }
    assert {"env_str", "env_int", "env_bool"} <= helpers
    return helpers


def _readers() -> dict[Path, set[str]]:
    """Each file that reads the environment, with the functions that take a variable's name
    first (besides ``os.environ.get`` and ``os.getenv``)."""
    helpers = _env_helpers()
    files = {
        path: helpers
        for path in sorted((ROOT / "config").rglob("*.py"))
        if path.name != "env.py" and "migrations" not in path.parts
    }
    files[ROOT / "scripts" / "run.py"] = set()
    files[ROOT / "docker" / "gunicorn.conf.py"] = {"_int"}  # its own os.environ reader
    return files


def _is_os_environ_get(func: ast.expr) -> bool:
    if not isinstance(func, ast.Attribute):
        return False
    if func.attr == "getenv":
        return isinstance(func.value, ast.Name) and func.value.id == "os"
    return (
        func.attr == "get"
        and isinstance(func.value, ast.Attribute)
        and func.value.attr == "environ"
    )


def _name_pattern(node: ast.expr) -> str | None:
    """A literal name, or an f-string's regular expression (``f"{prefix}_SCOPES"``)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return re.escape(node.value)
    if isinstance(node, ast.JoinedStr):
        return "".join(
            re.escape(part.value) if isinstance(part, ast.Constant) else "[A-Z0-9_]+"
            for part in node.values
        )
    return None


def _read_in(path: Path, helpers: set[str]) -> set[str]:
    """The patterns of every variable name ``path`` reads."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call) and node.args:
            func = node.func
            called = func.id if isinstance(func, ast.Name) else None
            if called in helpers or _is_os_environ_get(func):
                pattern = _name_pattern(node.args[0])
                if pattern is not None:
                    found.add(pattern)
        elif (
            isinstance(node, ast.Subscript)
            and isinstance(node.ctx, ast.Load)
            and isinstance(node.value, ast.Attribute)
            and node.value.attr == "environ"
        ):
            pattern = _name_pattern(node.slice)
            if pattern is not None:
                found.add(pattern)
    return found


def _patterns_read() -> set[str]:
    return {pattern for path, helpers in _readers().items() for pattern in _read_in(path, helpers)}


def _table_names() -> set[str]:
    """The variables named in the first column of the tables under "## Configuration"."""
    text = OPERATIONS.read_text(encoding="utf-8")
    section = text.split("\n## Configuration\n", 1)[1].split("\n## ", 1)[0]
    names: set[str] = set()
    for line in section.splitlines():
        if not line.startswith("| `"):
            continue
        first = line.strip("|").split("|", 1)[0]
        names.update(NAME.findall(first))
    return names


def test_the_reading_code_is_found() -> None:
    patterns = _patterns_read()
    assert {"HERALD_ENVIRONMENT", "EMAIL_HOST", "HERALD_PORT", "HERALD_WEB_THREADS"} <= patterns
    assert r"[A-Z0-9_]+_CLIENT_ID" in patterns, "the OAuth apps' names are read as f-strings"
    assert len(_table_names()) > 60


def test_every_variable_read_has_a_row() -> None:
    literal = {p for p in _patterns_read() if re.fullmatch(r"[A-Z][A-Z0-9_]*", p)}
    assert sorted(literal - _table_names()) == [], "read but not in docs/operations.md"


def test_every_row_names_a_variable_that_is_read() -> None:
    patterns = [re.compile(pattern) for pattern in _patterns_read()]
    unread = sorted(
        name
        for name in _table_names() - READ_BY_LIBRARIES.keys()
        if not any(pattern.fullmatch(name) for pattern in patterns)
    )
    assert unread == [], "in docs/operations.md but read nowhere"
