"""The shared harness of the Schemathesis contract tests (``tests/test_*contract_fuzz*.py``).

Each area's test module builds its own world (the data and credentials its operations need) and
its own strategies. What they share is here: the served contract, loaded once per process
through the WSGI app; the checks every answer must pass (never a 500, though a declared
502/503/504 is an answer; a declared status code, content type and schema); the selection of an
area's operations; and the Hypothesis run.
"""

from __future__ import annotations

import os
from typing import Any

import schemathesis
from django.core.wsgi import get_wsgi_application
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)


def not_an_undeclared_server_error(ctx: Any, response: Any, case: Any) -> bool | None:
    """``not_a_server_error``, except for a 502/503/504 the operation declares: a provider, model
    or dependency that fails is the contract working, not a crash. A 500 always
    fails."""
    status = response.status_code
    if status != 500 and str(status) in case.operation.definition.raw.get("responses", {}):
        return None
    return not_a_server_error(ctx, response, case)  # type: ignore[no-any-return]


CHECKS = [
    not_an_undeclared_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
]

SCHEMA = schemathesis.openapi.from_wsgi("/docs/openapi.json", get_wsgi_application())


def max_examples(default: int) -> int:
    """Examples per operation and generation mode; ``HERALD_FUZZ_EXAMPLES`` raises it for a deeper run."""
    return int(os.environ.get("HERALD_FUZZ_EXAMPLES", str(default)))


def operation_label(operation: Any) -> str:
    return f"{operation.method.upper()} {operation.path}"


def operations_under(*roots: str) -> list[Any]:
    """The contract's operations whose path is one of ``roots`` or lies below one, by label."""
    return sorted(
        (
            operation
            for operation in (result.ok() for result in SCHEMA.get_all_operations())  # type: ignore[union-attr]
            if any(
                operation.path == root or operation.path.startswith(f"{root}/") for root in roots
            )
        ),
        key=operation_label,
    )


def assert_contract_holds(
    strategy: st.SearchStrategy[Any],
    *,
    headers: dict[str, str],
    examples: int,
    cookies: dict[str, str] | None = None,
) -> None:
    """Call the app with every generated case; each answer must pass ``CHECKS``."""
    call_kwargs: dict[str, Any] = {"cookies": cookies} if cookies else {}

    @settings(
        max_examples=examples,
        derandomize=True,
        deadline=None,
        database=None,
        phases=[Phase.explicit, Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(case=strategy)
    def run(case: Any) -> None:
        response = case.call(headers=headers, **call_kwargs)
        case.validate_response(response, checks=CHECKS, headers=headers)

    run()
