"""The code's own shape: short product functions, and a record that stays inside the repository.

- No function of the shipped packages runs over ``MAX_FUNCTION_LINES`` lines unless its docstring
  says why (a paragraph starting ``Long because``). Complexity and statement counts are gated by
  ruff (``C901``, ``PLR0915`` in ``pyproject.toml``); length is the one measure ruff lacks.
- Nothing in the repository cites an issue number or a document outside it (a section of an
  outside specification or style guide, a path into a sibling folder): a maintainer who clones Herald must be
  able to follow every reference. The design record is ``docs/decisions/``.
"""

from __future__ import annotations

import ast
import re
import subprocess
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MAX_FUNCTION_LINES = 60
STATED_REASON = "Long because"

SECTION, ISSUE = "\u00a7", "issue"  # the pieces the rule's own examples are built from

# Citations of documents outside the repository, and of issue numbers.
OUTSIDE_REFERENCE = re.compile(
    r"(?:\b(?:spec|style|decisions|field.lessons)(?:\.md)?,? §\s?\d"
    r"|\binterface[- ]spec"
    r"|\bfield[- ]lessons?\b"
    r"|\.\./shared/"
    r"|\bissues? #?\d+\b"
    r"|\bissue-?\d+\b)",
    re.IGNORECASE,
)
# Text files the reference rule reads (what a maintainer reads); generated lock files are not.
READ_SUFFIXES = {".py", ".md", ".html", ".txt", ".toml", ".yml", ".yaml", ".cfg", ".ini", ".sh"}


def shipped_packages() -> list[str]:
    """The first-party packages the wheel ships (``pyproject.toml``), without the CLI's tests."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    patterns = config["tool"]["setuptools"]["packages"]["find"]["include"]
    return sorted({pattern.rstrip("*") for pattern in patterns})


def product_files() -> list[Path]:
    files = []
    for package in shipped_packages():
        for path in (ROOT / package).rglob("*.py"):
            if "migrations" not in path.parts and "tests" not in path.parts:
                files.append(path)
    return sorted(files)


def long_functions(path: Path, root: Path = ROOT) -> list[str]:
    """``file:line name (N lines)`` for every function over the limit without a stated reason."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        length = (node.end_lineno or node.lineno) - node.lineno + 1
        if length > MAX_FUNCTION_LINES and STATED_REASON not in (ast.get_docstring(node) or ""):
            where = path.relative_to(root)
            found.append(f"{where}:{node.lineno} {node.name} ({length} lines)")
    return found


def test_the_shipped_packages_are_found() -> None:
    packages = shipped_packages()
    assert {"config", "workspaces", "publishing", "readiness", "cli"} <= set(packages)
    assert len(product_files()) > 100


def test_no_product_function_is_long_without_a_stated_reason() -> None:
    offenders = [entry for path in product_files() for entry in long_functions(path)]
    assert offenders == [], (
        f"functions over {MAX_FUNCTION_LINES} lines: split them into named steps, or say why "
        f"in a docstring paragraph starting {STATED_REASON!r}"
    )


def test_the_length_rule_catches_a_long_function(tmp_path: Path) -> None:
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_FUNCTION_LINES))
    sample = tmp_path / "probe.py"
    sample.write_text(f"def long():\n{body}\n")
    assert long_functions(sample, tmp_path) == [f"probe.py:1 long ({MAX_FUNCTION_LINES + 1} lines)"]
    sample.write_text(f'def long():\n    """{STATED_REASON} it is a table."""\n{body}\n')
    assert long_functions(sample, tmp_path) == []


def tracked_text_files() -> list[Path]:
    try:
        listed = subprocess.run(
            ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True, timeout=30
        ).stdout.decode()
    except (OSError, subprocess.CalledProcessError):
        pytest.skip(
            "not a git checkout (an installed wheel): the repository rule reads git's files"
        )
    paths = [ROOT / name for name in listed.split("\0") if name]
    return [
        path
        for path in paths
        if (path.suffix in READ_SUFFIXES or path.name in {"Makefile", "Dockerfile"})
        and path.is_file()
    ]


def test_nothing_cites_an_issue_number_or_an_outside_document() -> None:
    offenders = []
    for path in tracked_text_files():
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), start=1):
            if OUTSIDE_REFERENCE.search(line):
                offenders.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()[:100]}")
    assert offenders == [], "cite docs/decisions/ or say it in your own words"


@pytest.mark.parametrize(
    "line",
    [
        # Built from parts, so that this file itself cites nothing.
        "(spec " + SECTION + "2 Theme)",
        "see decisions " + SECTION + "4",
        "the interface" + " spec says",
        "as in " + ISSUE + " 12",
        "fixed in " + ISSUE + " #7",
        "results/delivery-" + ISSUE + "3.json",
        "style " + SECTION + "8: no N+1",
        "never replaced by nothing (field " + "lesson 6)",
    ],
)
def test_the_reference_rule_catches_outside_citations(line: str) -> None:
    assert OUTSIDE_REFERENCE.search(line)


@pytest.mark.parametrize(
    "line", ["RFC 9110 §13.2.2", "WOFF2 §4.1", "the issuer of the token", "RFC 8259 §8.2"]
)
def test_the_reference_rule_leaves_standards_alone(line: str) -> None:
    assert not OUTSIDE_REFERENCE.search(line)
