"""The package as it ships: the wheel the Dockerfile builds, installed into a fresh virtual
environment outside the checkout.

``installed_herald(tmp_path_factory)`` copies the Docker build context (the checkout filtered by
``.dockerignore``, as ``COPY . .`` sees it), builds the wheel from it with ``pip wheel --no-deps``
(as the Dockerfile's builder stage does), creates a new virtual environment under pytest's
temporary folder and installs the wheel there with pip resolving its declared dependencies
(nothing from the checkout or the development environment is visible to it). It returns the
environment's ``bin`` folder (``django-admin``, ``gunicorn``, ``celery``, ``herald``) and does the
work once per test session. Fixture: ``installed_herald_bin`` (tests/conftest.py).

``dockerfile_instructions()`` and ``stages()`` read the Dockerfile (its builder and runtime
stages) for the tests that check what the image does.

Run the installed commands with ``installed_env(...)`` as their environment and an empty folder
as their working directory, so that only site-packages of the new environment can provide the
project's modules.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# The Dockerfile copies this file next to the installed environment (COPY docker/... /app/).
GUNICORN_CONF = ROOT / "docker" / "gunicorn.conf.py"
# Variables of the developer's shell that would let the checkout or its services leak into a
# process of the installed environment.
_DROPPED_ENV = (
    "PYTHONPATH",
    "PYTHONHOME",
    "PYTHONSTARTUP",
    "VIRTUAL_ENV",
    "DJANGO_SETTINGS_MODULE",
    "DATABASE_URL",
    "REDIS_URL",
)

_installed: dict[str, Path] = {}


class ShipError(AssertionError):
    """Building or installing the package failed; the message carries the tool's output."""


def _run(command: list[str], *, cwd: Path, env: dict[str, str] | None = None) -> str:
    completed = subprocess.run(
        command, cwd=cwd, env=env, capture_output=True, text=True, timeout=600, check=False
    )
    output = completed.stdout + completed.stderr
    if completed.returncode != 0:
        raise ShipError(f"{' '.join(command)} exited {completed.returncode}:\n{output[-6000:]}")
    return output


def dockerignore_patterns(root: Path = ROOT) -> list[re.Pattern[str]]:
    """The exclusion patterns of ``.dockerignore`` as regular expressions over relative paths
    (Docker's rules: ``*`` and ``?`` stay within one path segment, ``**`` spans any number of
    them, a pattern excludes a folder with everything below it)."""
    patterns: list[re.Pattern[str]] = []
    for raw in (root / ".dockerignore").read_text(encoding="utf-8").splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("!"):
            raise NotImplementedError(f".dockerignore exceptions are not supported here: {line}")
        line = line.strip("/")
        regex = ""
        index = 0
        while index < len(line):
            if line.startswith("**/", index):
                regex += "(?:.*/)?"
                index += 3
            elif line.startswith("**", index):
                regex += ".*"
                index += 2
            elif line[index] == "*":
                regex += "[^/]*"
                index += 1
            elif line[index] == "?":
                regex += "[^/]"
                index += 1
            else:
                regex += re.escape(line[index])
                index += 1
        patterns.append(re.compile(regex + r"\Z"))
    return patterns


def docker_context(root: Path = ROOT) -> list[Path]:
    """Relative paths of the files ``COPY . .`` puts into the image's builder stage."""
    patterns = dockerignore_patterns(root)

    def excluded(relative: str) -> bool:
        return any(pattern.match(relative) for pattern in patterns)

    files: list[Path] = []
    for folder, dirnames, filenames in os.walk(root):
        base = Path(folder).relative_to(root)
        dirnames[:] = sorted(d for d in dirnames if not excluded((base / d).as_posix()))
        files.extend(
            base / name for name in sorted(filenames) if not excluded((base / name).as_posix())
        )
    return files


def build_wheel(workdir: Path, root: Path = ROOT) -> Path:
    """Build the project's wheel from a copy of the Docker build context; its path."""
    context = workdir / "context"
    for relative in docker_context(root):
        target = context / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(root / relative, target)
    dist = workdir / "dist"
    _run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--wheel-dir", str(dist), str(context)],
        cwd=workdir,
        env=_clean_env(),
    )
    wheels = sorted(dist.glob("herald-*.whl"))
    if len(wheels) != 1:
        raise ShipError(f"expected one herald wheel in {dist}, found {wheels}")
    return wheels[0]


def install_wheel(wheel: Path, venv: Path) -> Path:
    """A new virtual environment with the wheel and its dependencies; its ``bin`` folder."""
    # Without pip of its own (pip of this environment installs into it): quicker to create.
    # pip compiles the bytecode as the Dockerfile's install does: every process the tests start
    # from it (PYTHONDONTWRITEBYTECODE=1, as in the image) reads it instead of compiling again.
    _run([sys.executable, "-m", "venv", "--without-pip", str(venv)], cwd=venv.parent)
    python = venv / "bin" / "python"
    _run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(python),
            "install",
            "--disable-pip-version-check",
            str(wheel),
        ],
        cwd=venv.parent,
        env=_clean_env(),
    )
    return venv / "bin"


def _clean_env() -> dict[str, str]:
    return {key: value for key, value in os.environ.items() if key not in _DROPPED_ENV}


def installed_env(bin_dir: Path, data_dir: Path, **extra: str) -> dict[str, str]:
    """Environment for a command of the installed package: its ``bin`` first on PATH, no
    PYTHONPATH, the embedded defaults (SQLite and the filesystem broker under ``data_dir``)
    unless ``extra`` says otherwise (``DATABASE_URL=...``, ``HERALD_ENVIRONMENT=...``)."""
    env = _clean_env()
    env.update(
        PATH=f"{bin_dir}{os.pathsep}{env.get('PATH', '')}",
        DJANGO_SETTINGS_MODULE="config.settings",
        HERALD_DATA_DIR=str(data_dir),
        PYTHONDONTWRITEBYTECODE="1",
    )
    env.update(extra)
    return env


# --- The Dockerfile, parsed (tests/deploy/test_containers.py, test_shipped_package.py) --------


def dockerfile_instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) pairs, continuation lines joined, comments dropped."""
    instructions: list[tuple[str, str]] = []
    pending = ""
    for raw in (ROOT / "Dockerfile").read_text(encoding="utf-8").splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        line = pending + line
        pending = ""
        keyword, _, arguments = line.partition(" ")
        instructions.append((keyword.upper(), arguments.strip()))
    assert not pending, "Dockerfile ends inside a continuation line"
    return instructions


def stages() -> list[tuple[str, str, list[tuple[str, str]]]]:
    """(base image with global ARG defaults resolved, stage name, instructions) per stage."""
    instructions = dockerfile_instructions()
    global_args: dict[str, str] = {}
    result: list[tuple[str, str, list[tuple[str, str]]]] = []
    for keyword, arguments in instructions:
        if keyword == "FROM":
            match = re.fullmatch(r"(\S+)\s+AS\s+(\S+)", arguments, flags=re.IGNORECASE)
            assert match, f"every stage is named (FROM <image> AS <name>): {arguments!r}"
            image = re.sub(
                r"\$\{(\w+)\}|\$(\w+)",
                lambda m: global_args.get(m.group(1) or m.group(2), m.group(0)),
                match.group(1),
            )
            result.append((image, match.group(2), []))
        elif not result:
            if keyword == "ARG" and "=" in arguments:
                name, _, default = arguments.partition("=")
                global_args[name.strip()] = default.strip()
        else:
            result[-1][2].append((keyword, arguments))
    return result


def installed_herald(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Build the wheel and install it into a fresh environment, once per test session; the
    environment's ``bin`` folder (outside the checkout)."""
    if "bin" not in _installed:
        workdir = tmp_path_factory.mktemp("installed-herald")
        if workdir.resolve().is_relative_to(ROOT):
            raise ShipError(f"the installed environment must live outside the checkout: {workdir}")
        wheel = build_wheel(workdir)
        _installed["context"] = workdir / "context"
        _installed["wheel"] = wheel
        _installed["bin"] = install_wheel(wheel, workdir / "venv")
    return _installed["bin"]


def installed_wheel() -> Path:
    """The wheel ``installed_herald`` built in this session (call that first)."""
    return _installed["wheel"]


def installed_context() -> Path:
    """The copy of the Docker build context that wheel was built from."""
    return _installed["context"]
