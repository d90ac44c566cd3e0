"""CHANGELOG.md's section of this release names what an operator must know before upgrading from
the previous release (the commit it names): every migration added since, and every setting
added or removed since.

A migration or a setting added later without its line in the CHANGELOG fails here. Both sides
are read from the source: the previous release's tree from git, this release's migrations from
the migration loader and its settings from docs/operations.md's configuration tables (which
tests/deploy/test_configuration_table.py checks against the code that reads the environment).
"""

from __future__ import annotations

import io
import re
import subprocess
import tarfile
from pathlib import Path

import pytest
from django.apps import apps
from django.db.migrations.loader import MigrationLoader

from config.version import RELEASE
from tests.upgrades_support import CHANGELOG, ROOT, git_available, previous_release

pytestmark = pytest.mark.skipif(
    not git_available(), reason="needs the git history (the previous release's tree)"
)

OPERATIONS = ROOT / "docs" / "operations.md"
VARIABLE = re.compile(r"`([A-Z][A-Z0-9_]*)`")
# A quoted upper-case name in the previous release's Python: every variable it could read.
QUOTED_NAME = re.compile(r"""["']([A-Z][A-Z0-9_]{3,})["']""")


def this_release_section() -> str:
    text = CHANGELOG.read_text(encoding="utf-8")
    start = re.search(rf"^## {re.escape(RELEASE)} .*$", text, re.MULTILINE)
    assert start, "CHANGELOG.md has a section for this release"
    rest = text[start.end() :]
    end = re.search(r"^## ", rest, re.MULTILINE)
    return rest[: end.start()] if end else rest


def subsection(section: str, heading: str) -> str:
    parts = section.split(f"\n### {heading}\n", 1)
    assert len(parts) == 2, f"the section has a '### {heading}'"
    return parts[1].split("\n### ", 1)[0]


def previous_release_files(*folders: str) -> dict[str, str]:
    """Path -> text of the previous release's files under ``folders`` (a folder that release
    did not have, such as a newer app's, holds nothing)."""
    present = subprocess.run(
        ["git", "-C", str(ROOT), "ls-tree", "--name-only", previous_release(), *folders],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split()
    if not present:
        return {}
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", "--format=tar", previous_release(), *present],
        check=True,
        capture_output=True,
    ).stdout
    files = {}
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        for member in tar.getmembers():
            extracted = tar.extractfile(member) if member.isfile() else None
            if extracted is not None:
                files[member.name] = extracted.read().decode("utf-8", errors="replace")
    return files


def first_party_apps() -> dict[str, Path]:
    return {
        config.label: Path(config.path)
        for config in apps.get_app_configs()
        if Path(config.path).is_relative_to(ROOT)
        and not Path(config.path).is_relative_to(ROOT / ".venv")
    }


def migrations_since_previous_release() -> list[str]:
    """``app.name`` of each first-party migration whose file the previous release lacks."""
    known = set(
        previous_release_files(*(str(p.relative_to(ROOT)) for p in first_party_apps().values()))
    )
    loader = MigrationLoader(None, ignore_no_migrations=True)
    added = []
    for (app, name), migration in loader.disk_migrations.items():
        folder = first_party_apps().get(app)
        if folder is None:
            continue
        path = Path(migration.__module__.replace(".", "/") + ".py")
        if str(path) not in known:
            added.append(f"{app}.{name}")
    return sorted(added)


def configuration_rows() -> set[str]:
    """The variables in the first column of docs/operations.md's configuration tables."""
    text = OPERATIONS.read_text(encoding="utf-8")
    section = text.split("\n## Configuration\n", 1)[1].split("\n## ", 1)[0]
    names: set[str] = set()
    for line in section.splitlines():
        if line.startswith("| `"):
            names.update(VARIABLE.findall(line.strip("|").split("|", 1)[0]))
    return names


def previous_release_names() -> set[str]:
    files = previous_release_files("config", "scripts", "docker")
    return {
        name
        for path, text in files.items()
        if path.endswith(".py")
        for name in QUOTED_NAME.findall(text)
    }


def test_the_previous_release_is_read() -> None:
    assert "publishing.0003_feed_entries_and_profile_url" in migrations_since_previous_release()
    assert "publishing.0002_drop_unused_voice_column" not in migrations_since_previous_release()
    assert {"HERALD_CREDENTIALS_KEY", "HERALD_WORKER_CONCURRENCY"} <= previous_release_names()


def test_every_migration_since_the_previous_release_has_a_row() -> None:
    table = subsection(this_release_section(), "Migrations")
    rows = {
        match
        for line in table.splitlines()
        if line.startswith("| `")
        for match in re.findall(r"`([a-z_]+\.\d{4}_[a-z0-9_]+)`", line.split("|")[1])
    }
    missing = [name for name in migrations_since_previous_release() if name not in rows]
    assert missing == [], "add a row to CHANGELOG.md's '### Migrations' table of this release"


def test_every_setting_added_or_removed_since_the_previous_release_is_named() -> None:
    changed = subsection(this_release_section(), "Changed settings")
    named = set(VARIABLE.findall(changed))
    rows, before = configuration_rows(), previous_release_names()
    added = sorted(rows - before)
    removed = sorted(name for name in before - rows if name.startswith("HERALD_"))
    assert added, "this release adds settings"
    hint = "name it in CHANGELOG.md, this release's '### Changed settings'"
    assert [name for name in added if name not in named] == [], f"new settings: {hint}"
    assert [name for name in removed if name not in named] == [], f"removed settings: {hint}"
