"""How Herald sends e-mail: ``HERALD_EMAIL_URL`` (one URL that sets Django's ``EMAIL_*``
settings), else Django's own ``EMAIL_*`` variables, else the console locally and nothing elsewhere
(:func:`email_settings_from_env`).

A small parser rather than a dependency (pyproject.toml says why): the whole format is the few
lines below.

=====================================================  ===========================================
``smtp://user:password@host:port``                     SMTP, plain (port 25 by default)
``smtp+tls://…`` or ``smtp://…?tls=1``                 SMTP with STARTTLS (port 587 by default)
``smtps://…`` or ``smtp+ssl://…``                      SMTP over TLS (port 465 by default)
``console://``                                         printed on standard output (local runs)
``locmem://``, ``dummy://``                            kept in memory (tests) / dropped
=====================================================  ===========================================

User name and password are percent-decoded (``%40`` for ``@``). ``?timeout=10`` sets
``EMAIL_TIMEOUT`` in seconds (30 by default for SMTP, so a dead server cannot hold a worker).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from config.env import ImproperlyConfiguredEnv, env_bool, env_float, env_int, env_str

SMTP_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
OTHER_BACKENDS = {
    "console": "django.core.mail.backends.console.EmailBackend",
    "locmem": "django.core.mail.backends.locmem.EmailBackend",
    "dummy": "django.core.mail.backends.dummy.EmailBackend",
}
SMTP_SCHEMES = {  # scheme: (STARTTLS, implicit TLS, default port)
    "smtp": (False, False, 25),
    "smtp+tls": (True, False, 587),
    "smtps": (False, True, 465),
    "smtp+ssl": (False, True, 465),
}
CONSOLE_BACKEND = OTHER_BACKENDS["console"]
DUMMY_BACKEND = OTHER_BACKENDS["dummy"]
DEFAULT_SMTP_TIMEOUT_SECONDS = 30
_TRUE = {"1", "true", "yes", "on"}


def parse_email_url(url: str) -> dict[str, Any]:
    """Django's e-mail settings for ``url``: ``EMAIL_BACKEND`` and, for SMTP, ``EMAIL_HOST``,
    ``EMAIL_PORT``, ``EMAIL_HOST_USER``, ``EMAIL_HOST_PASSWORD``, ``EMAIL_USE_TLS``,
    ``EMAIL_USE_SSL`` and ``EMAIL_TIMEOUT``. A malformed URL is a configuration error that
    never repeats the URL (it may hold a password)."""
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError as exc:
        raise ImproperlyConfiguredEnv("HERALD_EMAIL_URL is not a valid URL") from exc
    scheme = parts.scheme.lower()
    if scheme in OTHER_BACKENDS:
        return {"EMAIL_BACKEND": OTHER_BACKENDS[scheme]}
    if scheme not in SMTP_SCHEMES:
        known = ", ".join([*SMTP_SCHEMES, *OTHER_BACKENDS])
        raise ImproperlyConfiguredEnv(f"HERALD_EMAIL_URL: unknown scheme {scheme!r} (use {known})")
    if not parts.hostname:
        raise ImproperlyConfiguredEnv("HERALD_EMAIL_URL: an SMTP URL needs a host")
    use_tls, use_ssl, default_port = SMTP_SCHEMES[scheme]
    query = {key.lower(): values[-1] for key, values in parse_qs(parts.query).items()}
    if query.get("tls", "").lower() in _TRUE:
        use_tls = True
    if query.get("ssl", "").lower() in _TRUE:
        use_ssl = True
    if use_tls and use_ssl:
        raise ImproperlyConfiguredEnv(
            "HERALD_EMAIL_URL: choose STARTTLS (tls) or TLS (ssl), not both"
        )
    try:
        timeout = float(query.get("timeout", DEFAULT_SMTP_TIMEOUT_SECONDS))
    except ValueError as exc:
        raise ImproperlyConfiguredEnv("HERALD_EMAIL_URL: timeout must be a number") from exc
    return {
        "EMAIL_BACKEND": SMTP_BACKEND,
        "EMAIL_HOST": parts.hostname,
        "EMAIL_PORT": port or default_port,
        "EMAIL_HOST_USER": unquote(parts.username or ""),
        "EMAIL_HOST_PASSWORD": unquote(parts.password or ""),
        "EMAIL_USE_TLS": use_tls,
        "EMAIL_USE_SSL": use_ssl,
        "EMAIL_TIMEOUT": timeout,
    }


def django_email_settings_from_env() -> dict[str, Any] | None:
    """Django's ``EMAIL_*`` settings read from variables of the same names, when
    ``EMAIL_BACKEND`` or ``EMAIL_HOST`` is set (``None`` otherwise): ``EMAIL_BACKEND`` (SMTP by
    default), ``EMAIL_HOST``, ``EMAIL_PORT`` (25), ``EMAIL_HOST_USER``, ``EMAIL_HOST_PASSWORD``
    (a secret: ``EMAIL_HOST_PASSWORD_FILE`` works too), ``EMAIL_USE_TLS``, ``EMAIL_USE_SSL`` and
    ``EMAIL_TIMEOUT`` (seconds, 30 by default)."""
    backend = env_str("EMAIL_BACKEND")
    host = env_str("EMAIL_HOST")
    if not backend and not host:
        return None
    use_tls = env_bool("EMAIL_USE_TLS", default=False)
    use_ssl = env_bool("EMAIL_USE_SSL", default=False)
    if use_tls and use_ssl:
        raise ImproperlyConfiguredEnv(
            "EMAIL_USE_TLS and EMAIL_USE_SSL: choose STARTTLS (TLS) or TLS (SSL), not both"
        )
    return {
        "EMAIL_BACKEND": backend or SMTP_BACKEND,
        "EMAIL_HOST": host or "localhost",
        "EMAIL_PORT": env_int("EMAIL_PORT", 25),
        "EMAIL_HOST_USER": env_str("EMAIL_HOST_USER") or "",
        "EMAIL_HOST_PASSWORD": env_str("EMAIL_HOST_PASSWORD") or "",
        "EMAIL_USE_TLS": use_tls,
        "EMAIL_USE_SSL": use_ssl,
        "EMAIL_TIMEOUT": env_float("EMAIL_TIMEOUT", DEFAULT_SMTP_TIMEOUT_SECONDS),
    }


def email_settings_from_env(*, is_local: bool) -> tuple[dict[str, Any], bool]:
    """The e-mail settings of this instance and whether it sends e-mail at all, in order:
    ``HERALD_EMAIL_URL``; Django's ``EMAIL_*`` variables; the console when ``is_local``; else no
    e-mail (the dummy backend; invitations are passed on through their ``accept_url``)."""
    url = env_str("HERALD_EMAIL_URL")
    if url:
        return parse_email_url(url), True
    configured = django_email_settings_from_env()
    if configured is not None:
        return configured, True
    if is_local:
        return {"EMAIL_BACKEND": CONSOLE_BACKEND}, True
    return {"EMAIL_BACKEND": DUMMY_BACKEND}, False
