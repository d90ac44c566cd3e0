"""Every problem ``type`` URI resolves: the catalogue at /docs/problems/ is built from
the error classes (config.problem_catalogue), and a static scan of the source finds every code
the server can answer with, each of which must have its page."""

from __future__ import annotations

import ast
import html
import re
from pathlib import Path

import pytest
from django.test import Client

from config.problem_catalogue import catalogue

ROOT = Path(__file__).resolve().parents[2]
APP_DIRS = (
    "config",
    "workspaces",
    "publishing",
    "readiness",
    "themes",
    "voice",
    "discovery",
    "reposts",
)
# Functions that take a problem code as their third positional argument.
PROBLEM_BUILDERS = {"problem_response": 2, "_finish": 2, "_problem_body": 2}
NOT_A_PROBLEM = {"error"}  # rendered with type about:blank (config.api.problems)


def _source_files() -> list[Path]:
    files: list[Path] = []
    for folder in APP_DIRS:
        files += [p for p in (ROOT / folder).rglob("*.py") if "migrations" not in p.parts]
    return sorted(files)


def _callee(node: ast.Call) -> tuple[str, str]:
    """(last name, dotted chain) of a call's function."""
    parts: list[str] = []
    func: ast.expr = node.func
    while isinstance(func, ast.Attribute):
        parts.append(func.attr)
        func = func.value
    if isinstance(func, ast.Name):
        parts.append(func.id)
    chain = ".".join(reversed(parts))
    return (parts[0] if parts else ""), chain


def _string(node: ast.AST | None) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _codes_in(tree: ast.AST) -> set[str]:
    codes: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            name, chain = _callee(node)
            if ".objects." in f".{chain}." or name in {"get_or_create", "filter", "create", "get"}:
                continue  # ORM look-ups (Plan.objects.get_or_create(code="self_hosted"))
            if name == "ErrorDetail":
                continue  # a provider's own error code (X's invalid_grant), not a Herald problem
            for keyword in node.keywords:
                if keyword.arg == "code" and (value := _string(keyword.value)):
                    codes.add(value)
            index = PROBLEM_BUILDERS.get(name)
            if (
                index is not None
                and len(node.args) > index
                and (value := _string(node.args[index]))
            ):
                codes.add(value)
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                names: list[tuple[ast.expr, ast.expr]] = []
                if isinstance(target, ast.Tuple) and isinstance(node.value, ast.Tuple):
                    names = list(zip(target.elts, node.value.elts, strict=False))
                else:
                    names = [(target, node.value)]
                for name_node, value_node in names:
                    name = (
                        name_node.id
                        if isinstance(name_node, ast.Name)
                        else name_node.attr
                        if isinstance(name_node, ast.Attribute)
                        else ""
                    )
                    if name in {"code", "default_code"} and (value := _string(value_node)):
                        codes.add(value)
        elif isinstance(node, ast.Dict):
            # {404: "not_found", 405: "method_not_allowed"}.get(status) in the middleware
            keys_are_statuses = node.keys and all(
                isinstance(k, ast.Constant) and isinstance(k.value, int) and 400 <= k.value < 600
                for k in node.keys
            )
            values = [_string(v) for v in node.values]
            if keys_are_statuses and all(v and re.fullmatch(r"[a-z_]+", v) for v in values):
                codes.update(v for v in values if v)
    return codes


def scanned_codes() -> set[str]:
    codes: set[str] = set()
    for path in _source_files():
        codes |= _codes_in(ast.parse(path.read_text(), filename=str(path)))
    return codes - NOT_A_PROBLEM


# DRF's own exception codes that our handler passes through (config.api.problems).
DRF_CODES = {
    "not_found",
    "permission_denied",
    "method_not_allowed",
    "not_acceptable",
    "unsupported_media_type",
    "not_authenticated",
}


def test_the_scan_sees_codes_from_every_kind_of_source() -> None:
    codes = scanned_codes()
    # a class attribute, a tuple assignment, a code= override, a problem_response() argument,
    # a permission class, the middleware's status map, DRF's default_code
    for code in (
        "theme_in_use",
        "provider_error",
        "role_too_low",
        "malformed_request",
        "token_permission",
        "method_not_allowed",
        "payload_too_large",
        "idempotency_key_reused",
        "last_voice_profile",
        "default_voice_profile",
        "model_timeout",
        "csrf_failed",
        "dependency_unavailable",
    ):
        assert code in codes, code
    assert "self_hosted" not in codes  # a plan code, not a problem


ALL_CODES = sorted(scanned_codes() | set(catalogue()) | DRF_CODES)


@pytest.mark.parametrize("code", ALL_CODES)
def test_every_problem_code_has_its_page(code: str) -> None:
    response = Client().get(f"/docs/problems/{code}")
    assert response.status_code == 200, code
    assert response["Content-Type"].startswith("text/html")
    problem = catalogue()[code]
    page = response.content.decode()
    assert f"<code>{code}</code>" in page
    assert str(problem.status) in page
    assert html.escape(problem.title) in page
    assert html.escape(problem.description) in page
    assert 400 <= problem.status < 600


def test_catalogue_comes_from_the_error_classes() -> None:
    from publishing.errors import ProviderConnectError
    from voice.errors import LastVoiceProfileError

    problems = catalogue()
    assert problems["provider_error"].status == ProviderConnectError.status == 502
    assert problems["last_voice_profile"].title == LastVoiceProfileError.title
    assert problems["last_voice_profile"].description.startswith(
        "The workspace's last voice profile"
    )
    assert problems["invalid"].status == 422


def test_unknown_code_is_404() -> None:
    assert Client().get("/docs/problems/no_such_code").status_code == 404


def test_index_lists_every_code() -> None:
    response = Client().get("/docs/problems/")
    assert response.status_code == 200
    page = response.content.decode()
    for code in catalogue():
        assert f'href="/docs/problems/{code}"' in page


def test_problem_type_links_to_its_page(owner_client: object) -> None:
    """An API error's ``type`` is exactly the URL of its page."""
    response = owner_client.get("/api/v1/nothing-here")  # type: ignore[attr-defined]
    body = response.json()
    path = body["type"].removeprefix("http://testserver")
    assert path == f"/docs/problems/{body['code']}"
    assert Client().get(path).status_code == 200
