"""Redaction of secrets in anything the CLI prints: errors, diagnostics, log tails.

Covers bearer tokens, Herald API tokens (``hrld_…``), passwords and keys in URLs (user-info,
secret-looking query parameters, webhook and bot tokens in paths) and ``name=value`` /
``"name": "value"`` pairs whose name says secret, password, token or key.
"""

from __future__ import annotations

import re

REDACTED = "[REDACTED]"

# Names whose values are secrets, in key=value, key: value, JSON and query-string forms.
_SENSITIVE = (
    r"[A-Za-z0-9_.\-]*(?:password|passwd|secret|token|api[_\-]?key|apikey|access[_\-]?key"
    r"|private[_\-]?key|signing[_\-]?key|credential|signature|session[_\-]?id)"
    r"[A-Za-z0-9_.\-]*"
)
# Short query-parameter names that carry secrets in URLs (API keys, signatures, OAuth codes).
_QUERY_NAME = rf"(?:{_SENSITIVE}|key|sig|code)"

_PATTERNS: list[tuple[re.Pattern[str], str]] = [
    # Herald API tokens anywhere (hrld_<8 hex id>_<secret>): nothing of them is kept.
    (re.compile(r"hrld_[A-Za-z0-9_\-]+"), "hrld_" + REDACTED),
    # Authorization: Bearer <token> / Basic <credentials>.
    (re.compile(r"(?i)\b(bearer|basic)(\s+)[A-Za-z0-9._~+/=\-]+"), r"\1\2" + REDACTED),
    # Passwords in URL user-info: scheme://user:password@host.
    (re.compile(r"(?i)([a-z][a-z0-9+.\-]*://[^:/@\s]*:)[^@\s/]+@"), r"\1" + REDACTED + "@"),
    # Discord webhook tokens: /api/webhooks/<id>/<token>.
    (re.compile(r"(?i)(/webhooks/\d+/)[A-Za-z0-9_.\-]+"), r"\1" + REDACTED),
    # Telegram bot tokens: bot<digits>:<secret> (in URLs and on their own).
    (re.compile(r"\b(bot)?(\d{5,}):[A-Za-z0-9_\-]{20,}"), r"\1\2:" + REDACTED),
    # Secret-looking query parameters: ?api_key=…&sig=…
    (
        re.compile(rf"(?i)([?&;]{_QUERY_NAME}=)[^&#\s\"'<>]+"),
        r"\1" + REDACTED,
    ),
    # "password": "…" (JSON), password='…', PASSWORD=… (env), secret: … (YAML, logs).
    (
        re.compile(rf"(?i)(\"{_SENSITIVE}\"\s*:\s*\")(?:[^\"\\]|\\.)*(\")"),
        r"\1" + REDACTED + r"\2",
    ),
    (
        re.compile(rf"(?i)('{_SENSITIVE}'\s*:\s*')(?:[^'\\]|\\.)*(')"),
        r"\1" + REDACTED + r"\2",
    ),
    (
        re.compile(
            rf"(?i)(\b{_SENSITIVE}\s*[=:]\s*)(?!\[REDACTED\])(\"[^\"]*\"|'[^']*'|[^\s,;&}}\"']+)"
        ),
        r"\1" + REDACTED,
    ),
]


def redact(text: str) -> str:
    """``text`` with every secret it contains replaced by ``[REDACTED]``."""
    for pattern, replacement in _PATTERNS:
        text = pattern.sub(replacement, text)
    return text
