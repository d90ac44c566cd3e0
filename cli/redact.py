"""Redaction of secrets in anything the CLI prints: errors, diagnostics, log tails.

Covers bearer tokens and every ``Authorization`` header value, Herald API tokens (``hrld_…``),
passwords and keys in URLs (user-info, secret-looking query and fragment parameters, webhook and
bot tokens in paths), ``name=value`` / ``name: value`` / ``--name value`` / ``"name": value``
pairs whose name says secret, password, token or key, well-known vendor token shapes, and
PEM private-key blocks. The token the CLI itself uses is registered with :func:`remember_secret`
and removed wherever it appears, whatever its shape.

Redaction errs on the side of hiding: a value that merely looks like a secret is hidden too.
"""

from __future__ import annotations

import re
from collections.abc import Callable

REDACTED = "[REDACTED]"

# Names whose values are secrets, in key=value, key: value, JSON and query-string forms: a run of
# name characters that contains one of the words. The run is taken whole and never backtracked
# into (a possessive quantifier, Python 3.11+), so a long run costs linear time, not quadratic.
_SENSITIVE = (
    r"(?=[A-Za-z0-9_.\-]*?(?:password|passwd|passphrase|secret|token|api[_\-]?key|apikey"
    r"|access[_\-]?key|private[_\-]?key|signing[_\-]?key|credential|signature|session[_\-]?id"
    r"|cookie))"
    r"[A-Za-z0-9_.\-]++"
)
# Short query-parameter names that carry secrets in URLs (API keys, signatures, OAuth codes).
_QUERY_NAME = rf"(?:{_SENSITIVE}|key|sig|code|auth|pass|pwd|jwt)"
# Names are matched only from their first character: trying every position inside a long run
# of name characters would make redaction quadratic in the length of a log line.
_NAME_START = r"(?<![A-Za-z0-9_.\-])"
# A name that is a file name (credentials.json) is no secret's name.
_NOT_A_FILE = (
    r"(?<!\.json)(?<!\.yml)(?<!\.yaml)(?<!\.toml)(?<!\.txt)(?<!\.py)(?<!\.log)(?<!\.ini)(?<!\.cfg)"
)
# A value that is already redacted is left alone (so the patterns can run one after another).
_NOT_DONE = r"(?!\[REDACTED\])"

Replacement = str | Callable[[re.Match[str]], str]

_PATTERNS: list[tuple[re.Pattern[str], Replacement]] = [
    # PEM private keys, whole blocks (a log tail is redacted as one text, so blocks span lines);
    # a block cut off at either end of the text is hidden up to that end.
    (
        re.compile(
            r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----.*?(?:-----END [A-Z0-9 ]*PRIVATE KEY-----|\Z)",
            re.DOTALL,
        ),
        "-----" + REDACTED + " PRIVATE KEY-----",
    ),
    (
        re.compile(
            r"(?m)(?:^[ \t]*+[A-Za-z0-9+/=]{16,100}+[ \t]*+\r?\n)++[ \t]*+"
            r"-----END [A-Z0-9 ]*PRIVATE KEY-----"
        ),
        "-----" + REDACTED + " PRIVATE KEY-----",
    ),
    # Herald API tokens anywhere (hrld_<8 hex id>_<secret>): nothing of them is kept.
    (re.compile(r"(?i)hrld_[A-Za-z0-9_\-]+"), "hrld_" + REDACTED),
    # The whole value of an Authorization / Proxy-Authorization header, whatever its scheme.
    (
        re.compile(
            r"(?i)(\b(?:proxy-)?authorization[\"']?\s*[:=]\s*[\"']?)"
            r"(?![A-Za-z]+\s+\[REDACTED\])"
            r"(?:(bearer|basic|token|digest|negotiate|apikey)\s+)?" + _NOT_DONE + r"[^\s\"',;]+"
        ),
        lambda m: m.group(1) + (m.group(2) + " " if m.group(2) else "") + REDACTED,
    ),
    # Bearer <token> / Basic <credentials> elsewhere.
    (
        re.compile(r"(?i)\b(bearer|basic)(\s+)" + _NOT_DONE + r"[A-Za-z0-9._~+/=\-]+"),
        r"\1\2" + REDACTED,
    ),
    # Passwords in URL user-info: scheme://user:password@host (a password may hold '@' or '/';
    # host:port/path/@name is a port, not a password).
    (
        re.compile(
            r"(?i)(?<![a-z0-9+.\-])([a-z][a-z0-9+.\-]*+://[^:/@\s\"'<>]*+:)(?!\d+[/?#])[^\s\"'<>]{0,256}@"
        ),
        r"\1" + REDACTED + "@",
    ),
    # Webhook tokens in paths: Discord /api/webhooks/<id>/<token>, Slack /services/T…/B…/<token>.
    (re.compile(r"(?i)(/webhooks/\d+/)[A-Za-z0-9_.\-]+"), r"\1" + REDACTED),
    (
        re.compile(r"(?i)(hooks\.slack\.com/services/[A-Z0-9]+/[A-Z0-9]+/)[A-Za-z0-9]+"),
        r"\1" + REDACTED,
    ),
    # Telegram bot tokens: bot<digits>:<secret> (in URLs and on their own).
    (re.compile(r"\b(bot)?(\d{5,}):[A-Za-z0-9_\-]{20,}"), r"\1\2:" + REDACTED),
    # Well-known vendor token shapes (GitHub, Slack, OpenAI-style, AWS key IDs, Google API keys)
    # and JSON Web Tokens.
    (
        re.compile(
            r"\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}"
            r"|xox[abposr]-[A-Za-z0-9\-]{8,}|sk-[A-Za-z0-9_\-]{16,}"
            r"|(?:AKIA|ASIA)[0-9A-Z]{16}|AIza[0-9A-Za-z_\-]{30,}"
            r"|eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{4,}\.[A-Za-z0-9_\-]*)"
        ),
        REDACTED,
    ),
    # Secret-looking query or fragment parameters: ?api_key=…&sig=…, #access_token=…
    (
        re.compile(rf"(?i)([?&;#]{_QUERY_NAME}=)" + _NOT_DONE + r"[^&#\s\"'<>]+"),
        r"\1" + REDACTED,
    ),
    # "password": "…" (JSON), 'password': '…' (Python), "token": 12345 (JSON, not a string).
    (
        re.compile(rf"(?i)(\"{_SENSITIVE}\"\s*:\s*\")(?:[^\"\\]|\\.)*(\")"),
        r"\1" + REDACTED + r"\2",
    ),
    (
        re.compile(rf"(?i)('{_SENSITIVE}'\s*:\s*')(?:[^'\\]|\\.)*(')"),
        r"\1" + REDACTED + r"\2",
    ),
    (
        re.compile(rf"(?i)([\"']{_SENSITIVE}[\"']\s*:\s*)(?![\"'\[{{]|null\b)[^\s,}}\]]+"),
        r"\1" + REDACTED,
    ),
    # --password=value, or --api-key value when the value looks like a secret (a digit or a
    # symbol, four characters or more) rather than a word of prose.
    (
        re.compile(
            rf"(?i)((?<!\S)--?{_SENSITIVE}(?:=|\s+(?=\S*[0-9_+/=])(?=[^\s]{{4}})))"
            + _NOT_DONE
            + r"(?!-)[^\s]+"
        ),
        r"\1" + REDACTED,
    ),
    # password='…', PASSWORD=… (environment), secret: … (YAML, logs), Cookie: a=b; not a file
    # name followed by a colon ("credentials.json: Permission denied").
    (
        re.compile(
            rf"(?i)({_NAME_START}{_SENSITIVE}{_NOT_A_FILE}\s*[=:]\s*)"
            + _NOT_DONE
            + r"(\"[^\"]*\"|'[^']*'|[^\s,;&}\"']+)"
        ),
        r"\1" + REDACTED,
    ),
]

_known: set[str] = set()


def remember_secret(value: str | None) -> None:
    """Hide ``value`` (e.g. the API token in use) wherever it appears, whatever its shape."""
    if value and len(value) >= 8:
        _known.add(value)


def forget_secrets() -> None:
    """Forget every secret given to :func:`remember_secret` (tests start from a clean slate)."""
    _known.clear()


def redact(text: str) -> str:
    """``text`` with every secret it contains replaced by ``[REDACTED]``."""
    for secret in sorted(_known, key=len, reverse=True):
        text = text.replace(secret, REDACTED)
    for pattern, replacement in _PATTERNS:
        text = pattern.sub(replacement, text)
    return text
