"""The test suite's own layout: a test module never imports another test module, and each
provider's tests live in its own folder.

Shared test code lives in support modules (``tests/*_support.py``, the stand-ins of
``tests/providers/``, ``tests/conftest.py``); importing a test module from another would run its
module-level fixtures and tests' imports twice and tie two test files together. Every Python file
below ``tests/`` is read (not imported) and each import, at any depth (function-level ones too,
and ``importlib.import_module("...")`` with a literal name), is resolved to a file of the suite.

``tests/providers/<name>/`` holds a provider's stand-in (``standin.py``) and its adapter tests;
the tests of the adapters' shared plumbing sit in ``tests/providers/`` itself, and those that go
through publishing's services and delivery in ``tests/publishing/``.
"""

from __future__ import annotations

import ast
from pathlib import Path

from providers import PROVIDERS

TESTS = Path(__file__).resolve().parents[1]
ROOT = TESTS.parent


def is_test_module(path: Path) -> bool:
    """What pytest collects as a test module (its default ``python_files``)."""
    return path.suffix == ".py" and (path.name.startswith("test_") or path.stem.endswith("_test"))


def imported_modules(source: str, module: str) -> set[str]:
    """Dotted names of every module ``source`` (the module ``module``) may import: ``import a.b``
    gives ``a.b``; ``from a import b`` gives ``a`` and ``a.b`` (``b`` may be a module);
    relative imports are resolved against ``module``."""
    found: set[str] = set()
    package = module.rsplit(".", 1)[0]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                anchor = ".".join(parts[: len(parts) - node.level + 1])
                base = f"{anchor}.{base}" if base else anchor
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute | ast.Name)
            and (node.func.attr if isinstance(node.func, ast.Attribute) else node.func.id)
            in ("import_module", "__import__")
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            found.add(node.args[0].value)
    return found


def module_file(name: str) -> Path | None:
    """The file of the suite the dotted ``name`` is, if any."""
    if name != "tests" and not name.startswith("tests."):
        return None
    path = ROOT.joinpath(*name.split("."))
    for candidate in (path.with_suffix(".py"), path / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def imported_test_modules(path: Path) -> list[str]:
    relative = path.relative_to(ROOT).with_suffix("")
    module = ".".join(relative.parts)
    targets = {module_file(name) for name in imported_modules(path.read_text("utf-8"), module)}
    return sorted(
        target.relative_to(ROOT).as_posix()
        for target in targets
        if target is not None and target != path and is_test_module(target)
    )


def test_the_check_sees_every_form_of_import(tmp_path: Path) -> None:
    source = (
        "import tests.api.test_health\n"
        "from tests.deploy.test_make_run import Run\n"
        "from tests.discovery import test_discovery\n"
        "def later():\n"
        "    from tests.api.test_names import x\n"
        "    importlib.import_module('tests.cli.test_cli')\n"
        "from tests.openapi_support import SchemaChecker\n"
    )
    names = imported_modules(source, "tests.reposts.test_example")
    targets = {module_file(name) for name in names} - {None}
    assert sorted(t.relative_to(ROOT).as_posix() for t in targets if is_test_module(t)) == [
        "tests/api/test_health.py",
        "tests/api/test_names.py",
        "tests/cli/test_cli.py",
        "tests/deploy/test_make_run.py",
        "tests/discovery/test_discovery.py",
    ]
    assert imported_modules("from .test_x import y\n", "tests.api.test_z") >= {"tests.api.test_x"}


def test_no_test_module_imports_another_test_module() -> None:
    files = sorted(TESTS.rglob("*.py"))
    assert any(is_test_module(path) for path in files)
    offenders = {
        path.relative_to(ROOT).as_posix(): imported
        for path in files
        if (imported := imported_test_modules(path))
    }
    assert not offenders, (
        "test modules imported by other files of tests/ (move the shared code into a support "
        f"module, tests/*_support.py or tests/providers/): {offenders}"
    )


def test_each_provider_has_a_folder_with_its_stand_in_and_its_adapter_tests() -> None:
    root = TESTS / "providers"
    folders = {p.name for p in root.iterdir() if p.is_dir() and p.name != "__pycache__"}
    # The built-in feed calls no outside service: nothing to stand in for (tests/publishing/).
    # ``meta`` is the Meta providers' shared core (providers/meta/), not a provider itself.
    shared = {"meta"}
    assert folders - shared == set(PROVIDERS) - {"feed"}
    folders -= shared
    for name in sorted(folders):
        folder = root / name
        assert (folder / "__init__.py").is_file(), f"{folder} is not a package"
        assert (folder / "standin.py").is_file(), f"{name}'s stand-in is not {folder}/standin.py"
        assert list(folder.glob(f"test_{name}_*.py")), f"{name} has no adapter tests in {folder}"
    # Beside the folders: the shared control API and helpers, and the cross-provider tests.
    loose = {p.name for p in root.glob("*.py") if not is_test_module(p)}
    assert loose == {"__init__.py", "standin.py"}
    assert not list((TESTS / "publishing").glob("test_provider_adapters_*.py"))
