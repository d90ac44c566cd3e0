"""Fixtures of the tests/ folder (the project-wide ones are in the root conftest.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.shipped_support import installed_herald


@pytest.fixture(scope="session")
def installed_herald_bin(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``bin`` folder of a fresh virtual environment, outside the checkout, with the wheel the
    Dockerfile builds installed in it (tests/shipped_support.py); built once per session."""
    return installed_herald(tmp_path_factory)
