"""Herald's version: the release (the package version, CHANGELOG.md) and the source revision.

``RELEASE`` is the one place the release number is written; pyproject.toml reads it from here
(``[tool.setuptools.dynamic]``), so the installed package, ``GET /api/v1/health``, the admin and
``herald --version`` agree. The source revision is ``HERALD_SOURCE_REVISION`` (the image's build
argument) or, in a git checkout, the commit checked out; an installed package without either
says ``unknown``.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from django.conf import settings

RELEASE = "0.2.0"


@lru_cache(maxsize=4)
def _git_revision(base_dir: str) -> str:
    """The commit checked out at ``base_dir`` (a repository or a worktree), read from the files
    under ``.git`` (no git binary in the image)."""
    git = Path(base_dir) / ".git"
    try:
        if git.is_file():  # a worktree: "gitdir: <path>"
            git = Path(git.read_text().split(":", 1)[1].strip())
        head = (git / "HEAD").read_text().strip()
        if not head.startswith("ref:"):
            return head[:64]
        ref = head.split(":", 1)[1].strip()
        common = git / "commondir"
        root = (git / common.read_text().strip()) if common.exists() else git
        for folder in (git, root):  # a worktree's branches live in the common directory
            if (folder / ref).exists():
                return (folder / ref).read_text().strip()[:64]
        for line in (root / "packed-refs").read_text().splitlines():
            if line.endswith(f" {ref}"):
                return line.split(" ", 1)[0][:64]
        return "unknown"
    except (OSError, IndexError):
        return "unknown"


def source_revision() -> str:
    """``HERALD_SOURCE_REVISION``, else the checkout's commit, else ``unknown``."""
    return settings.HERALD_SOURCE_REVISION[:64] or _git_revision(str(settings.BASE_DIR))


def label() -> str:
    """``0.2.0 (source 0123456789ab)``: for people (the admin, logs)."""
    return f"{RELEASE} (source {source_revision()[:12]})"
