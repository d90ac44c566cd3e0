"""Log redaction: secrets never reach a log line, whatever a library prints."""

from __future__ import annotations

import logging
import re

_PATTERNS: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"hrld_[0-9a-f]{8}_[A-Za-z0-9_\-]+"), "hrld_[REDACTED]"),
    (re.compile(r"(?i)(bearer\s+)[A-Za-z0-9._~+/=\-]+"), r"\1[REDACTED]"),
    (re.compile(r"(?i)(://[^:/@\s]+:)[^@\s]+@"), r"\1[REDACTED]@"),
    # The invitation page's path carries the accept token (workspaces.web); API paths carry ids.
    (re.compile(r"(?<!/api/v1)(/invitations/)[A-Za-z0-9_\-]{20,}"), r"\1[REDACTED]"),
    # The e-mail verification link: /verify-email/<signed token>/.
    (re.compile(r"(/verify-email/)[A-Za-z0-9_\-:.]{20,}"), r"\1[REDACTED]"),
    # Django's password-reset link: /password-reset/<uidb64>/<token>/.
    (
        re.compile(r"(/password-reset/[A-Za-z0-9_\-]+/)(?!set-password/)[A-Za-z0-9_\-]{20,}"),
        r"\1[REDACTED]",
    ),
    (
        re.compile(
            r"(?i)((?:password|passwd|secret|token|api[_-]?key|access[_-]?token|refresh[_-]?token|client[_-]?secret)[\"']?\s*[:=]\s*[\"']?)[^\s\"'&,}]+"
        ),
        r"\1[REDACTED]",
    ),
]


def redact(text: str) -> str:
    for pattern, replacement in _PATTERNS:
        text = pattern.sub(replacement, text)
    return text


class RedactSecretsFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        redacted = redact(message)
        if redacted != message:
            record.msg = redacted
            record.args = None
        return True
