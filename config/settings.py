"""Herald settings: one module, every value from the environment (see docs/operations.md "Configuration")."""

from __future__ import annotations

import contextlib
import os
import secrets
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import dj_database_url
import django_stubs_ext
from kombu import Queue

from config.email_url import email_settings_from_env
from config.env import (
    ImproperlyConfiguredEnv,
    env_bool,
    env_choice,
    env_float,
    env_int,
    env_list,
    env_str,
)
from config.oauth_apps import oauth_apps_from_env
from config.storage import default_storage

django_stubs_ext.monkeypatch()

BASE_DIR = Path(__file__).resolve().parent.parent
DATA_DIR = Path(env_str("HERALD_DATA_DIR", str(BASE_DIR / ".data")) or BASE_DIR / ".data")

# --- Deployment identity -------------------------------------------------------------------
HERALD_DEPLOYMENT = env_choice("HERALD_DEPLOYMENT", ("self_hosted", "cloud"), "self_hosted")
HERALD_ENVIRONMENT = env_choice("HERALD_ENVIRONMENT", ("local", "staging", "production"), "local")
IS_LOCAL = HERALD_ENVIRONMENT == "local"
DEBUG = env_bool("HERALD_DEBUG", default=False)
HERALD_PUBLIC_URL = (env_str("HERALD_PUBLIC_URL") or "").rstrip("/")


def _secret_key() -> str:
    configured = env_str("SECRET_KEY")
    if configured:
        return configured
    if not IS_LOCAL:
        raise ImproperlyConfiguredEnv("SECRET_KEY must be set outside HERALD_ENVIRONMENT=local")
    # Local runs persist a generated key so sessions survive restarts of `make run`.
    key_file = DATA_DIR / "secret_key"
    if not key_file.exists():
        # Owner-only from its creation (no window before a chmod), written under a private name
        # and linked into place, so processes starting together all read the same whole key.
        DATA_DIR.mkdir(mode=0o700, parents=True, exist_ok=True)
        partial = DATA_DIR / f".secret_key.{secrets.token_hex(8)}"
        fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(secrets.token_urlsafe(50))
            os.link(partial, key_file)
        except FileExistsError:
            pass  # another process linked its key first: use that one
        finally:
            partial.unlink(missing_ok=True)
    return key_file.read_text(encoding="utf-8").strip()


SECRET_KEY = _secret_key()
if IS_LOCAL:
    _DEFAULT_HOSTS = ["localhost", "127.0.0.1", "[::1]", "testserver"]
else:
    # The public host by default (an empty list would answer every request 400). Probes from
    # inside the network (container health check, load balancer) must send an allowed Host.
    _public_host = urlsplit(HERALD_PUBLIC_URL).hostname if HERALD_PUBLIC_URL else None
    _DEFAULT_HOSTS = [_public_host] if _public_host else []
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", default=_DEFAULT_HOSTS)
CSRF_TRUSTED_ORIGINS = env_list(
    "HERALD_CSRF_TRUSTED_ORIGINS", default=[HERALD_PUBLIC_URL] if HERALD_PUBLIC_URL else []
)
CSRF_FAILURE_VIEW = "config.error_pages.csrf_failure"  # HTML page; problem+json under /api/

# --- Applications --------------------------------------------------------------------------
INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "config.apps.CommonConfig",
    "workspaces",
    "publishing",
    "readiness",
    "themes",
    "voice",
    "discovery",
    "reposts",
    "events",
]

MIDDLEWARE = [
    "config.api.middleware.HostCheckMiddleware",  # a bad Host: one 400, one WARNING line
    "django.middleware.security.SecurityMiddleware",
    "config.security_headers.ContentSecurityPolicyMiddleware",  # no inline script or style
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "config.api.middleware.ApiProblemMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"
APPEND_SLASH = False

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "config" / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

# --- Database ------------------------------------------------------------------------------
DATABASE_URL = env_str("DATABASE_URL") or f"sqlite:///{DATA_DIR / 'herald.sqlite3'}"
DATABASES = {
    "default": dj_database_url.parse(
        DATABASE_URL,
        conn_max_age=env_int("HERALD_DB_CONN_MAX_AGE", 60),
        conn_health_checks=True,
    )
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    DATA_DIR.mkdir(mode=0o700, parents=True, exist_ok=True)
    # The database holds sessions and credentials: owner-only from its first byte, whichever
    # command creates it (SQLite gives its -wal and -shm files the database file's mode).
    # Anything else (an existing file, a folder that does not exist) is left to SQLite.
    if (database_file := str(DATABASES["default"]["NAME"])) not in ("", ":memory:"):
        with contextlib.suppress(OSError):
            os.close(os.open(database_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    DATABASES["default"]["OPTIONS"] = {
        "transaction_mode": "IMMEDIATE",
        "timeout": 20,
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA busy_timeout=20000; PRAGMA synchronous=NORMAL;",
    }
    DATABASES["default"]["CONN_MAX_AGE"] = 0
    DATABASES["default"]["TEST"] = {"NAME": env_str("HERALD_SQLITE_TEST_NAME")}
else:
    DATABASES["default"].setdefault("OPTIONS", {})
    # Bounded statements: a wedged query must not hold a web worker forever.
    DATABASES["default"]["OPTIONS"].setdefault("connect_timeout", 5)
# Django's PostgreSQL connection pool (psycopg_pool) for a process that runs many threads: the
# delivery worker runs HERALD_WORKER_CONCURRENCY sends at once on threads, and with a pool it
# holds at most this many connections whatever its concurrency (a send gives its connection
# back while it waits for the provider: config/db/__init__.py). 0: no pool, one persistent
# connection per thread (the web processes: a few threads each). docker-compose.yml sets it for
# the worker; PostgreSQL only (SQLite connections are files, opened per task).
HERALD_DB_POOL_SIZE = env_int("HERALD_DB_POOL_SIZE", 0)
if HERALD_DB_POOL_SIZE > 0 and DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
    DATABASES["default"]["OPTIONS"]["pool"] = {
        "min_size": 1,
        "max_size": HERALD_DB_POOL_SIZE,
        "timeout": 30,  # waiting for a free connection; then the task fails (and is retried)
    }
    DATABASES["default"]["CONN_MAX_AGE"] = 0  # Django: a pool replaces persistent connections
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# --- Cache, broker -------------------------------------------------------------------------
REDIS_URL = env_str("REDIS_URL")
if REDIS_URL:
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": REDIS_URL,
            "KEY_PREFIX": "herald",
            "OPTIONS": {"socket_connect_timeout": 2, "socket_timeout": 2},
        }
    }
else:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
# Rate-limit counters without Redis: one SQLite file shared by every local process
# (config/limits.py); with REDIS_URL they live in Redis.
HERALD_LIMITS_DB = DATA_DIR / "limits.sqlite3"

BROKER_DIR = DATA_DIR / "broker"
CELERY_BROKER_URL = REDIS_URL or "filesystem://"
if CELERY_BROKER_URL.startswith("redis://"):
    # kombu's Redis transport, reusing one redis-py client per channel (config/broker.py).
    CELERY_BROKER_TRANSPORT = "config.broker:RedisTransport"
if not REDIS_URL:
    # kombu's, writing each message atomically (config/broker.py).
    CELERY_BROKER_TRANSPORT = "config.broker:FilesystemTransport"
    for _sub in ("out", "processed", "control"):
        (BROKER_DIR / _sub).mkdir(parents=True, exist_ok=True)
    CELERY_BROKER_TRANSPORT_OPTIONS: dict[str, object] = {
        "data_folder_in": str(BROKER_DIR / "out"),
        "data_folder_out": str(BROKER_DIR / "out"),
        "processed_folder": str(BROKER_DIR / "processed"),
        "store_processed": False,
        # Exchange tables (remote control, broadcasts): kombu's default is ./control in the
        # working directory, i.e. the checkout.
        "control_folder": str(BROKER_DIR / "control"),
        # How long a worker sleeps when it finds nothing to take, and also when its prefetch
        # window is full (kombu's virtual transports): at kombu's default of 1 s, a threads
        # worker took at most its 16 sends a second, whatever the backlog (make run's burst,
        # bench/README.md "Burst benchmark"). An idle poll lists an empty folder.
        "polling_interval": 0.1,
    }
else:
    # Longer than any countdown and task runtime, so Redis never redelivers live work.
    CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": 3600}
CELERY_TASK_ALWAYS_EAGER = False
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
# The worker: a send mostly waits for the provider (200 ms to seconds), so a worker
# process runs HERALD_WORKER_CONCURRENCY tasks at once on threads (Celery's "threads" pool), not
# one forked process per task: 1,000 sends of 300 ms each wait 150 s in all at 2 x 3.3/s
# (prefork 2), 10 s at 32 threads. What remains is CPU, about 20 ms per delivery, and one
# process's Python runs on one core at a time: `make run` and docker-compose.yml start
# HERALD_WORKER_PROCESSES (2) worker processes of 16 threads (bench/README.md "Burst benchmark").
# HERALD_WORKER_POOL=prefork brings back processes (the only pool that enforces the task time
# limits; the provider calls have their own timeouts either way).
CELERY_WORKER_POOL = env_choice("HERALD_WORKER_POOL", ("threads", "prefork"), "threads")
CELERY_WORKER_CONCURRENCY = env_int("HERALD_WORKER_CONCURRENCY", 16)
# Without this, Celery's Django fixup closes every database connection before and after each
# task, so every delivery opened a new PostgreSQL connection (42 % fewer deliveries/s, see
# bench/README.md "Delivery benchmark"). Connections now live for up to this many tasks, and
# config/celery.py checks them around every task as Django does around a request.
CELERY_DB_REUSE_MAX = 1000
CELERY_TASK_SOFT_TIME_LIMIT = env_int("HERALD_TASK_SOFT_TIME_LIMIT", 120)
CELERY_TASK_TIME_LIMIT = env_int("HERALD_TASK_TIME_LIMIT", 180)
CELERY_TASK_IGNORE_RESULT = True
CELERY_RESULT_BACKEND = None
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_WORKER_HIJACK_ROOT_LOGGER = False
CELERY_BEAT_SCHEDULE_FILENAME = str(DATA_DIR / "celerybeat-schedule")
# CELERY_BEAT_SCHEDULE is declared once, under "Periodic tasks", after the intervals it reads.

# --- Storage -------------------------------------------------------------------------------
MEDIA_ROOT = DATA_DIR / "media"
MEDIA_URL = "/media/"
STATIC_ROOT = Path(env_str("HERALD_STATIC_ROOT") or DATA_DIR / "static")
if IS_LOCAL:  # collectstatic output; WhiteNoise warns when the folder is missing
    STATIC_ROOT.mkdir(parents=True, exist_ok=True)
STATIC_URL = "/static/"
HERALD_S3_BUCKET = env_str("HERALD_S3_BUCKET")
HERALD_S3_ENDPOINT_URL = env_str("HERALD_S3_ENDPOINT_URL")
STORAGES: dict[str, dict[str, Any]] = {
    "default": default_storage(HERALD_S3_BUCKET, HERALD_S3_ENDPOINT_URL, MEDIA_ROOT),
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
}
HERALD_S3_CHECK_TIMEOUT_SECONDS = env_float("HERALD_S3_CHECK_TIMEOUT_SECONDS", 5.0)

# --- Identity ------------------------------------------------------------------------------
AUTH_USER_MODEL = "workspaces.User"
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
LOGIN_URL = "/login/"
LOGIN_REDIRECT_URL = "/settings/developer/"
LOGOUT_REDIRECT_URL = "/login/"
HERALD_RECENT_AUTH_SECONDS = env_int("HERALD_RECENT_AUTH_SECONDS", 15 * 60)
# Failed authentication (workspaces/authentication.py): bad bearer tokens per client address,
# wrong passwords per (client address, account) and against unknown accounts per client address,
# each per minute; then a per-account back-off that doubles from 1 s up to its maximum.
HERALD_AUTH_FAILURES_PER_MINUTE = env_int("HERALD_AUTH_FAILURES_PER_MINUTE", 30)
HERALD_ACCOUNT_FAILURES_BEFORE_BACKOFF = env_int("HERALD_ACCOUNT_FAILURES_BEFORE_BACKOFF", 10)
HERALD_ACCOUNT_BACKOFF_MAX_SECONDS = env_int("HERALD_ACCOUNT_BACKOFF_MAX_SECONDS", 15 * 60)
HERALD_TOKEN_MAX_DAYS = 365
HERALD_INVITATION_DAYS = env_int("HERALD_INVITATION_DAYS", 14)
# Invitations sent (created or resent) per day: by one person, for one workspace, to one address.
HERALD_INVITATIONS_PER_USER_PER_DAY = env_int("HERALD_INVITATIONS_PER_USER_PER_DAY", 50)
HERALD_INVITATIONS_PER_WORKSPACE_PER_DAY = env_int("HERALD_INVITATIONS_PER_WORKSPACE_PER_DAY", 100)
HERALD_INVITATIONS_PER_RECIPIENT_PER_DAY = env_int("HERALD_INVITATIONS_PER_RECIPIENT_PER_DAY", 5)
# Verification links (/settings/) a person may ask for per hour.
HERALD_VERIFICATION_EMAILS_PER_HOUR = env_int("HERALD_VERIFICATION_EMAILS_PER_HOUR", 3)
# Password reset by e-mail (/password-reset/): requests per client address per hour.
HERALD_PASSWORD_RESETS_PER_HOUR = env_int("HERALD_PASSWORD_RESETS_PER_HOUR", 5)
PASSWORD_RESET_TIMEOUT = env_int("HERALD_PASSWORD_RESET_SECONDS", 3 * 60 * 60)

# --- E-mail (invitations, password reset) --------------------------------------------------
# HERALD_EMAIL_URL, else Django's EMAIL_* variables (config/email_url.py); with neither a local
# run prints e-mails on the console and any other environment sends none (HERALD_EMAIL_ENABLED).
_EMAIL, HERALD_EMAIL_ENABLED = email_settings_from_env(is_local=IS_LOCAL)
EMAIL_BACKEND = _EMAIL["EMAIL_BACKEND"]
EMAIL_HOST = _EMAIL.get("EMAIL_HOST", "localhost")
EMAIL_PORT = _EMAIL.get("EMAIL_PORT", 25)
EMAIL_HOST_USER = _EMAIL.get("EMAIL_HOST_USER", "")
EMAIL_HOST_PASSWORD = _EMAIL.get("EMAIL_HOST_PASSWORD", "")
EMAIL_USE_TLS = _EMAIL.get("EMAIL_USE_TLS", False)
EMAIL_USE_SSL = _EMAIL.get("EMAIL_USE_SSL", False)
EMAIL_TIMEOUT = _EMAIL.get("EMAIL_TIMEOUT")
_MAIL_HOST = urlsplit(HERALD_PUBLIC_URL).hostname if HERALD_PUBLIC_URL else None
DEFAULT_FROM_EMAIL = env_str("DEFAULT_FROM_EMAIL") or f"Herald <herald@{_MAIL_HOST or 'localhost'}>"
SERVER_EMAIL = DEFAULT_FROM_EMAIL

# --- Security (check --deploy is clean with HERALD_ENVIRONMENT=production) -----------------
SECURE_PROXY_SSL_HEADER = (
    ("HTTP_X_FORWARDED_PROTO", "https") if env_bool("HERALD_TRUST_X_FORWARDED_PROTO") else None
)
_HTTPS = not IS_LOCAL and env_bool("HERALD_HTTPS", default=True)
SECURE_SSL_REDIRECT = _HTTPS and env_bool("HERALD_SSL_REDIRECT", default=True)
# Probes are called over plain HTTP by orchestrators and load balancers inside the network.
SECURE_REDIRECT_EXEMPT = [r"^api/v1/health$", r"^api/v1/ready$"]
SESSION_COOKIE_SECURE = _HTTPS
CSRF_COOKIE_SECURE = _HTTPS
SECURE_HSTS_SECONDS = env_int("HERALD_HSTS_SECONDS", 31536000) if _HTTPS else 0
SECURE_HSTS_INCLUDE_SUBDOMAINS = _HTTPS
SECURE_HSTS_PRELOAD = _HTTPS and env_bool("HERALD_HSTS_PRELOAD", default=True)
SECURE_CONTENT_TYPE_NOSNIFF = True
SESSION_COOKIE_HTTPONLY = True
X_FRAME_OPTIONS = "DENY"

# --- Request limits ------------------------------------------------------------------------
HERALD_MAX_JSON_BODY_BYTES = env_int("HERALD_MAX_JSON_BODY_BYTES", 1024 * 1024)
HERALD_MAX_UPLOAD_BYTES = env_int("HERALD_MAX_UPLOAD_BYTES", 200 * 1024 * 1024)
DATA_UPLOAD_MAX_MEMORY_SIZE = HERALD_MAX_JSON_BODY_BYTES
FILE_UPLOAD_MAX_MEMORY_SIZE = 2 * 1024 * 1024

# --- API -----------------------------------------------------------------------------------
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "workspaces.authentication.BearerTokenAuthentication",
        "workspaces.authentication.CsrfSessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": [
        "rest_framework.permissions.IsAuthenticated",
        "workspaces.permissions.TokenScopePermission",
    ],
    # DRF's JSONRenderer output, encoded by orjson (config/api/renderers.py).
    "DEFAULT_RENDERER_CLASSES": ["config.api.renderers.FastJSONRenderer"],
    # DRF's JSON parser, but over-deep nesting and lone surrogates are a 400, not a 500.
    "DEFAULT_PARSER_CLASSES": ["config.api.parsers.JSONParser"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "config.api.problems.problem_exception_handler",
    "DEFAULT_THROTTLE_CLASSES": ["config.api.throttling.UserRateThrottle"],
    "DEFAULT_THROTTLE_RATES": {
        "user": env_str("HERALD_API_RATE", "1200/min"),
        "discovery": env_str("HERALD_DISCOVERY_RATE", "6/min"),
    },
    "UNAUTHENTICATED_USER": "django.contrib.auth.models.AnonymousUser",
    "NUM_PROXIES": env_int("HERALD_NUM_PROXIES", 0) if env_str("HERALD_NUM_PROXIES") else None,
}

SPECTACULAR_SETTINGS: dict[str, Any] = {
    "TITLE": "Herald API",
    "DESCRIPTION": (
        "Self-hostable, multi-workspace social publishing. A successful request that queues a "
        "publication does not prove that the provider published it: delivery is tracked "
        "through each destination's status. Errors are application/problem+json (RFC 9457)."
    ),
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SCHEMA_PATH_PREFIX": r"/api/v1",
    "SCHEMA_PATH_PREFIX_TRIM": False,
    "COMPONENT_SPLIT_REQUEST": True,
    "COMPONENT_NO_READ_ONLY_REQUIRED": False,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    # One name per choice set, so that fields called "role" or "status" in different
    # resources do not collide (a collision is a schema warning; CI fails on warnings).
    "ENUM_NAME_OVERRIDES": {
        "OkEnum": ["ok"],
        "ReadyEnum": ["ready"],
        "OrganizationRoleEnum": "workspaces.models.OrganizationMembership.Role",
        "WorkspaceRoleEnum": "workspaces.models.WorkspaceMembership.Role",
        "MembershipStatusEnum": "workspaces.models.WorkspaceMembership.Status",
        "InvitationStatusEnum": "workspaces.models.Invitation.Status",
        "InvitationDeliveryEnum": "workspaces.models.Invitation.Delivery",
        "ApiTokenStatusEnum": "workspaces.models.ApiToken.Status",
        "ApiTokenPermissionEnum": "workspaces.models.ApiToken.PERMISSIONS",
        "AccessAuditActionEnum": "workspaces.models.AccessAuditEvent.Action",
        "ReadinessOperationEnum": "readiness.models.OPERATION_CHOICES",
        "AccountStatusEnum": "publishing.models.Account.Status",
        "DestinationActionEnum": "publishing.api.serializers.DESTINATION_ACTIONS",
    },
    # Named, so that generators do not name the inline object after its property
    # (Destination + options = DestinationOptions, the destination-options response).
    "APPEND_COMPONENTS": {
        "schemas": {
            "DestinationOptionSelection": {
                "type": "object",
                "description": "A destination's chosen options: option name -> chosen value.",
                "additionalProperties": {"type": "string"},
            }
        }
    },
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "config.api.schema.postprocess_problem_responses",
        "config.api.schema.postprocess_portable_schema",
        "events.openapi.postprocess_event_types",  # the event types as x-webhooks
    ],
    "SERVERS": [{"url": "/", "description": "this instance"}],
}

# --- Providers and readiness ---------------------------------------------------------------
SERVICE_PROVIDER_CERTIFICATION_ENFORCED = env_bool(
    "SERVICE_PROVIDER_CERTIFICATION_ENFORCED", default=False
)
HERALD_DISABLED_PROVIDERS = env_list("HERALD_DISABLED_PROVIDERS", default=[])
HERALD_CREDENTIALS_KEY = env_str("HERALD_CREDENTIALS_KEY")

# --- Internationalisation ------------------------------------------------------------------
LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

# --- Logging -------------------------------------------------------------------------------
LOG_LEVEL = env_str("HERALD_LOG_LEVEL", "INFO") or "INFO"
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {"redact": {"()": "config.logging.RedactSecretsFilter"}},
    "formatters": {
        "plain": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"},
    },
    "handlers": {
        "console": {"class": "logging.StreamHandler", "formatter": "plain", "filters": ["redact"]},
    },
    "root": {"handlers": ["console"], "level": LOG_LEVEL},
    "loggers": {
        "django.server": {"level": "WARNING"},
    },
}
# Serve app static files (admin, API docs assets) straight from the apps when collectstatic has
# not run (the embedded `make run` default); the container image runs collectstatic.
WHITENOISE_USE_FINDERS = True

# --- Publishing and delivery (docs/decisions/0007) ---------------------------------------------
HERALD_MAX_MEDIA_BYTES = env_int("HERALD_MAX_MEDIA_BYTES", 100 * 1024 * 1024)
HERALD_MAX_IMAGE_PIXELS = env_int("HERALD_MAX_IMAGE_PIXELS", 50_000_000)
# Resumable (tus) uploads at /api/v1/uploads: the largest file (413 above), and how long an
# unfinished upload may sit idle before the cleanup task removes it and its spool file.
HERALD_MAX_VIDEO_BYTES = env_int("HERALD_MAX_VIDEO_BYTES", 1024 * 1024 * 1024)
# The probe worker converts a video to MP4 (H.264/AAC) when it is in another container or codec
# (publishing/services/video_convert.py): a conversion stops after this many seconds or when its
# output passes this size, and the video then stays as uploaded.
HERALD_TRANSCODE_MAX_SECONDS = max(1, env_int("HERALD_TRANSCODE_MAX_SECONDS", 300))
HERALD_TRANSCODE_MAX_BYTES = env_int("HERALD_TRANSCODE_MAX_BYTES", HERALD_MAX_VIDEO_BYTES)
HERALD_UPLOAD_EXPIRY_SECONDS = max(60, env_int("HERALD_UPLOAD_EXPIRY_SECONDS", 24 * 3600))
# With S3 storage a resumable upload goes to the bucket as multipart parts of this size as its
# bytes arrive (S3 takes no part below 5 MiB but the last).
HERALD_S3_UPLOAD_PART_BYTES = max(
    5 * 1024 * 1024, env_int("HERALD_S3_UPLOAD_PART_BYTES", 8 * 1024 * 1024)
)
# Lifetime of the signed public media URLs (/media/<token>/<name>) that providers fetch from;
# with S3 storage the redirect to the object store's presigned URL has the same lifetime.
HERALD_MEDIA_URL_SECONDS = max(60, env_int("HERALD_MEDIA_URL_SECONDS", 3600))
HERALD_PROVIDER_TIMEOUT_SECONDS = env_float("HERALD_PROVIDER_TIMEOUT_SECONDS", 10.0)
# Provider URLs typed by users (Mastodon instances, Discord webhooks) must be public HTTPS
# addresses unless this is set (tests and private networks).
HERALD_ALLOW_PRIVATE_PROVIDER_URLS = env_bool("HERALD_ALLOW_PRIVATE_PROVIDER_URLS", default=False)
HERALD_BLUESKY_SERVICE_URL = env_str("HERALD_BLUESKY_SERVICE_URL", "https://bsky.social")
HERALD_BLUESKY_VIDEO_URL = env_str("HERALD_BLUESKY_VIDEO_URL", "https://video.bsky.app")
HERALD_TELEGRAM_API_URL = env_str("HERALD_TELEGRAM_API_URL", "https://api.telegram.org")
HERALD_DELIVERY_MAX_ATTEMPTS = env_int("HERALD_DELIVERY_MAX_ATTEMPTS", 3)
HERALD_RETRY_BASE_SECONDS = env_float("HERALD_RETRY_BASE_SECONDS", 30.0)
HERALD_RETRY_MAX_SECONDS = env_float("HERALD_RETRY_MAX_SECONDS", 900.0)
HERALD_RETRY_AFTER_CAP_SECONDS = env_float("HERALD_RETRY_AFTER_CAP_SECONDS", 1800.0)
# A claim outlives the longest provider call; an expired claim means the worker died. So it
# must outlast the task's hard time limit: a live (slow) send is never mistaken for a dead one.
HERALD_DELIVERY_LEASE_SECONDS = env_int(
    "HERALD_DELIVERY_LEASE_SECONDS", CELERY_TASK_TIME_LIMIT + 30
)
HERALD_DELIVERY_DEADLINE_SECONDS = env_int("HERALD_DELIVERY_DEADLINE_SECONDS", 6 * 3600)
# Long sends (docs/decisions/0020-long-sends.md). A send's claim, its in-flight slots and the
# send task's time limits are sized to the bytes it uploads: the base above plus the bytes at
# this minimum throughput (bytes per second; 512 KiB/s: a 99 MB video adds about 200 s). A send
# the provider is still processing waits with no worker thread held; past
# HERALD_DELIVERY_PENDING_MAX_SECONDS since its write started it fails with the reason.
HERALD_DELIVERY_MIN_THROUGHPUT_BYTES = max(
    1024, env_int("HERALD_DELIVERY_MIN_THROUGHPUT_BYTES", 512 * 1024)
)
HERALD_DELIVERY_PENDING_MAX_SECONDS = env_int("HERALD_DELIVERY_PENDING_MAX_SECONDS", 3600)
# A send whose video is still being probed waits for it (no thread held, no attempt counted);
# still processing this long after the send was due, the destination fails with the reason.
HERALD_MEDIA_WAIT_MAX_SECONDS = env_int("HERALD_MEDIA_WAIT_MAX_SECONDS", 3600)
# The send task's time limits: the default ones plus the largest video Herald accepts
# (HERALD_MAX_VIDEO_BYTES) at the minimum throughput.
HERALD_DELIVERY_TRANSFER_SECONDS = HERALD_MAX_VIDEO_BYTES // HERALD_DELIVERY_MIN_THROUGHPUT_BYTES
# Due work reaches the queue within about one interval (dispatch lag p99 <= 2 s for
# 2,000 publications due in the same second; bench/delivery.py). An idle tick is a handful of
# indexed queries.
HERALD_DISPATCH_INTERVAL_SECONDS = env_float("HERALD_DISPATCH_INTERVAL_SECONDS", 1.0)
HERALD_DISPATCH_STALE_SECONDS = env_int("HERALD_DISPATCH_STALE_SECONDS", 30)
# Politeness and fairness (docs/operations.md "Delivery: politeness and fairness"): provider calls in flight at once per
# connected account and per provider host (a send waits up to the slot wait for a free slot,
# then goes back to the queue without counting an attempt); a slot's lease frees it when a
# worker dies holding it. The dispatcher lets at most this many destinations of one workspace
# be queued (ready) or sending at once, taking due work round-robin by workspace (0: no cap).
HERALD_PROVIDER_MAX_IN_FLIGHT_PER_ACCOUNT = env_int("HERALD_PROVIDER_MAX_IN_FLIGHT_PER_ACCOUNT", 4)
HERALD_PROVIDER_MAX_IN_FLIGHT_PER_HOST = env_int("HERALD_PROVIDER_MAX_IN_FLIGHT_PER_HOST", 16)
HERALD_PROVIDER_SLOT_LEASE_SECONDS = env_int("HERALD_PROVIDER_SLOT_LEASE_SECONDS", 60)
HERALD_DISPATCH_MAX_QUEUED_PER_WORKSPACE = env_int("HERALD_DISPATCH_MAX_QUEUED_PER_WORKSPACE", 64)

# --- OAuth 2 provider apps (spec "Accounts") ------------------------------------------------
# The operator's app registration per OAuth provider: HERALD_<P>_CLIENT_ID / _CLIENT_SECRET
# (both accept _FILE). A provider without both is "needs_configuration" (readiness
# "configuration" fact) and cannot be connected (a provider's app is configured when both its
# client_id and client_secret are non-empty). The URLs default to the real services and
# are overridable so tests can point them at stand-ins on 127.0.0.1.
PROVIDER_OAUTH_APPS = oauth_apps_from_env()
# An authorization started by connect must come back within this many seconds (the state is
# single-use and bound to the user and workspace).
HERALD_OAUTH_STATE_SECONDS = env_int("HERALD_OAUTH_STATE_SECONDS", 15 * 60)
# Token lifecycle: refresh this long before an access token expires (beat task and the
# just-in-time refresh before a send); tokens without programmatic refresh make the account
# reconnect_required this many days before they expire.
HERALD_TOKEN_REFRESH_AHEAD_SECONDS = env_int("HERALD_TOKEN_REFRESH_AHEAD_SECONDS", 15 * 60)
HERALD_TOKEN_REFRESH_INTERVAL_SECONDS = env_float("HERALD_TOKEN_REFRESH_INTERVAL_SECONDS", 300.0)
HERALD_RECONNECT_WARNING_DAYS = env_int("HERALD_RECONNECT_WARNING_DAYS", 7)
# A refresh in progress holds its account's lease this long: it outlasts the token call, and a
# lease left by a dead worker frees the account for the next refresh once it expires.
HERALD_TOKEN_REFRESH_LEASE_SECONDS = env_int(
    "HERALD_TOKEN_REFRESH_LEASE_SECONDS", int(HERALD_PROVIDER_TIMEOUT_SECONDS * 3) + 30
)
# The dispatcher's ticks have a queue of their own, so that a backlog of sends in the default
# queue never holds up the next tick (and with it newly due work). A worker started without
# -Q consumes every queue listed here; one started with -Q must name both.
CELERY_TASK_DEFAULT_QUEUE = "celery"
CELERY_TASK_QUEUES = (
    Queue("celery", routing_key="celery"),
    Queue("herald.dispatch", routing_key="herald.dispatch"),
)
# The routes to it are declared with the beat schedule, under "Periodic tasks".

# --- Voice profiles and discovery (voice/, discovery/; docs/decisions/0017)--------------------
# Discovery engine: "builtin" (deterministic, no network; the default) or "llm" (an
# OpenAI-compatible chat-completions endpoint with JSON-schema-constrained output).
HERALD_DISCOVERY_ENGINE = env_choice("HERALD_DISCOVERY_ENGINE", ("builtin", "llm"), "builtin")
HERALD_DISCOVERY_LLM_URL = (env_str("HERALD_DISCOVERY_LLM_URL") or "").rstrip("/")
HERALD_DISCOVERY_LLM_MODEL = env_str("HERALD_DISCOVERY_LLM_MODEL") or ""
HERALD_DISCOVERY_LLM_API_KEY = env_str("HERALD_DISCOVERY_LLM_API_KEY") or ""
HERALD_DISCOVERY_LLM_TIMEOUT_SECONDS = env_float("HERALD_DISCOVERY_LLM_TIMEOUT_SECONDS", 30.0)

# --- Provider readiness (readiness/; docs/decisions/0008) -------------------------------------
# SERVICE_PROVIDER_CERTIFICATION_ENFORCED and HERALD_DISABLED_PROVIDERS are read above.
# The provider environment of the configured provider apps (a subject key; on a cloud
# production deployment anything but "production" is a policy restriction).
HERALD_PROVIDER_ENVIRONMENT = env_choice(
    "HERALD_PROVIDER_ENVIRONMENT", ("development", "sandbox", "production"), "production"
)
HERALD_PROVIDER_POLICY_MODE = env_choice(
    "HERALD_PROVIDER_POLICY_MODE", ("standard", "strict"), "standard"
)
# Server policy restrictions: "provider", "provider.format", "provider:account_kind",
# "mode:<policy_mode>" or "provider@<policy_mode>" entries.
HERALD_PROVIDER_POLICY_RESTRICTIONS = env_list("HERALD_PROVIDER_POLICY_RESTRICTIONS", default=[])
# Source revision recorded with certification runs. The image bakes in its build argument
# HERALD_SOURCE_REVISION (Dockerfile, docker-compose.yml); when unset, readiness/subjects.py reads
# the commit of the git checkout at BASE_DIR, and an installed package (no .git) records "unknown".
HERALD_SOURCE_REVISION = env_str("HERALD_SOURCE_REVISION") or ""
HERALD_CERTIFICATION_RETEST_DAYS = env_int("HERALD_CERTIFICATION_RETEST_DAYS", 30)

# --- Repost automation (reposts) --------------------------------------------------------------
# One engine tick: new executions for freshly published destinations, then every due execution
# is advanced by a worker. Metrics of one post are read at most once per interval (bounded
# cadence); a worker's claim on an execution lasts the lease (an expired claim: it died).
HERALD_REPOST_TICK_SECONDS = env_float("HERALD_REPOST_TICK_SECONDS", 30.0)
HERALD_REPOST_METRICS_INTERVAL_SECONDS = env_int("HERALD_REPOST_METRICS_INTERVAL_SECONDS", 900)
HERALD_REPOST_LEASE_SECONDS = env_int("HERALD_REPOST_LEASE_SECONDS", CELERY_TASK_TIME_LIMIT + 30)
HERALD_REPOST_MAX_FAILURES = env_int("HERALD_REPOST_MAX_FAILURES", 5)

# --- Periodic tasks (beat) ------------------------------------------------------------------
# Every periodic task, in one place. A tick expires when the next one is due (or soon after),
# so a backlog never runs stale ticks in a burst.
CELERY_BEAT_SCHEDULE: dict[str, dict[str, object]] = {
    "publishing.account_tokens_refresh_due": {
        "task": "publishing.account_tokens_refresh_due",
        "schedule": HERALD_TOKEN_REFRESH_INTERVAL_SECONDS,
        "options": {"expires": HERALD_TOKEN_REFRESH_INTERVAL_SECONDS},
    },
    "publishing.uploads_expire": {
        "task": "publishing.uploads_expire",
        "schedule": 15 * 60,
        "options": {"expires": 15 * 60},
    },
    "publishing.delivery_dispatch": {
        "task": "publishing.delivery_dispatch",
        "schedule": HERALD_DISPATCH_INTERVAL_SECONDS,
        "options": {"expires": HERALD_DISPATCH_INTERVAL_SECONDS * 2},
    },
    "publishing.housekeeping": {
        "task": "publishing.housekeeping",
        "schedule": 3600.0,
        "options": {"expires": 1800},
    },
    # Whether networks that fetch media by URL reach them through HERALD_PUBLIC_URL (/ready).
    "publishing.public_origin_check": {
        "task": "publishing.public_origin_check",
        "schedule": 3600.0,
        "options": {"expires": 1800},
    },
    "reposts.engine_tick": {
        "task": "reposts.engine_tick",
        "schedule": HERALD_REPOST_TICK_SECONDS,
        "options": {"expires": HERALD_REPOST_TICK_SECONDS * 2},
    },
}
# The ticks of the dispatcher, housekeeping and the repost engine go to herald.dispatch, never
# behind a backlog of sends.
CELERY_TASK_ROUTES = {
    "publishing.delivery_dispatch": {"queue": "herald.dispatch"},
    "publishing.housekeeping": {"queue": "herald.dispatch"},
    "reposts.engine_tick": {"queue": "herald.dispatch"},
}

# --- Themes (themes/, docs/themes.md) -------------------------------------------------------
HERALD_THEME_FONT_MAX_BYTES = env_int("HERALD_THEME_FONT_MAX_BYTES", 2 * 1024 * 1024)
HERALD_THEME_FONT_MAX_DECODED_BYTES = env_int(
    "HERALD_THEME_FONT_MAX_DECODED_BYTES", 16 * 1024 * 1024
)
HERALD_THEME_IMAGE_MAX_BYTES = env_int("HERALD_THEME_IMAGE_MAX_BYTES", 5 * 1024 * 1024)
HERALD_THEME_IMAGE_MAX_SIDE = env_int("HERALD_THEME_IMAGE_MAX_SIDE", 8192)
HERALD_THEME_IMAGE_MAX_PIXELS = env_int("HERALD_THEME_IMAGE_MAX_PIXELS", 32_000_000)
# One component name per manifest choice set that several fields share (import paths: the
# settings never import app code).
SPECTACULAR_SETTINGS["ENUM_NAME_OVERRIDES"].update(
    {
        "ThemeSchemeEnum": "themes.manifest.vocabulary.SCHEMES",
        "ThemeEmphasisEnum": "themes.manifest.vocabulary.EMPHASIS",
        "ThemeFieldStyleEnum": "themes.manifest.vocabulary.FIELD_STYLES",
        "ThemeLayerEnum": "themes.manifest.vocabulary.LAYERS",
        "ThemeFontStyleEnum": "themes.manifest.vocabulary.FONT_STYLES",
        "ThemeFontFormatEnum": "themes.manifest.vocabulary.FONT_FORMATS",
        "ThemeFontDisplayEnum": "themes.manifest.vocabulary.FONT_DISPLAYS",
        "ThemeReferenceKindEnum": "themes.manifest.vocabulary.REFERENCE_KINDS",
        "ThemeAssetKindEnum": "themes.manifest.vocabulary.ASSET_KINDS",
        "ThemeSafeFamilyEnum": "themes.manifest.vocabulary.SAFE_FAMILIES",
        "ThemeIconPackEnum": "themes.manifest.vocabulary.ICON_PACKS",
        "ThemeAssetSlotEnum": "themes.manifest.vocabulary.ASSET_SLOTS",
        "ThemeAssetMimeTypeEnum": "themes.manifest.vocabulary.ASSET_MIME_TYPES",
        "ThemeSchemaVersionEnum": "themes.manifest.vocabulary.SCHEMA_VERSION_CHOICES",
        "ThemeButtonEnum": "themes.manifest.vocabulary.BUTTON_STYLES",
        "ThemeCardEnum": "themes.manifest.vocabulary.CARD_STYLES",
        "ThemeContainerEnum": "themes.manifest.vocabulary.CONTAINER_STYLES",
        "ThemeDecorationEnum": "themes.manifest.vocabulary.DECORATIONS",
        "ThemeEditorChromeEnum": "themes.manifest.vocabulary.EDITOR_CHROMES",
        "ThemeEmptyStateEnum": "themes.manifest.vocabulary.EMPTY_STATES",
        "ThemeLinkEnum": "themes.manifest.vocabulary.LINK_STYLES",
        "ThemeListEnum": "themes.manifest.vocabulary.LIST_STYLES",
        "ThemeLoadingStateEnum": "themes.manifest.vocabulary.LOADING_STATES",
        "ThemeNavigationEnum": "themes.manifest.vocabulary.NAVIGATION_STYLES",
        "ThemePaginationEnum": "themes.manifest.vocabulary.PAGINATION_STYLES",
        "ThemeTableEnum": "themes.manifest.vocabulary.TABLE_STYLES",
        "ThemeTabsEnum": "themes.manifest.vocabulary.TABS_STYLES",
        "ThemeToolbarEnum": "themes.manifest.vocabulary.TOOLBAR_STYLES",
        "ThemeBorderStyleEnum": "themes.manifest.vocabulary.BORDER_STYLES",
        "ThemeCanvasTreatmentEnum": "themes.manifest.vocabulary.CANVAS_TREATMENTS",
        "ThemeDensityEnum": "themes.manifest.vocabulary.DENSITIES",
        "ThemeReducedMotionEnum": "themes.manifest.vocabulary.REDUCED_MOTION",
    }
)
