"""Outages of a dependency that Herald degrades around instead of failing with a 500.

Redis (cache, shared rate limits, Celery broker) can be down while PostgreSQL is up. A request
that needs it then gets a 503 ``dependency_unavailable`` problem (``config/api/problems.py``),
and a task message that cannot be sent is left to the dispatcher, which re-enqueues the work
from the database. Neither logs a traceback per request: :func:`log_outage` writes one line per
dependency and place at most once per :data:`LOG_INTERVAL_SECONDS`, with the number of
occurrences it held back.
"""

from __future__ import annotations

import logging
import threading
import time

from django.conf import settings
from django.db.utils import InterfaceError as DatabaseInterfaceError
from django.db.utils import OperationalError as DatabaseOperationalError
from kombu.exceptions import OperationalError as BrokerOperationalError
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

LOG_INTERVAL_SECONDS = 60.0

# Connection refused or reset, DNS, a timeout, Redis still loading its data after a restart
# (BusyLoadingError is a ConnectionError): the server cannot answer now. Command errors
# (ResponseError, wrong type, ...) are bugs and stay 500s.
REDIS_OUTAGE_ERRORS: tuple[type[Exception], ...] = (RedisConnectionError, RedisTimeoutError)

# The database server refused or dropped the connection, or timed out (Django wraps the
# driver's errors in these). Integrity and programming errors are bugs and stay 500s.
DATABASE_OUTAGE_ERRORS: tuple[type[Exception], ...] = (
    DatabaseOperationalError,
    DatabaseInterfaceError,
)

_lock = threading.Lock()
_last_logged: dict[tuple[str, str], float] = {}
_held_back: dict[tuple[str, str], int] = {}


def outage_dependency(exc: BaseException) -> str | None:
    """The name of the unreachable dependency ``exc`` reports (``redis``, ``broker``,
    ``database``), or None when ``exc`` is not an outage."""
    if isinstance(exc, DATABASE_OUTAGE_ERRORS):
        return "database"
    if isinstance(exc, REDIS_OUTAGE_ERRORS):
        return "redis"
    if isinstance(exc, BrokerOperationalError):  # kombu could not reach the broker
        return "redis" if settings.REDIS_URL else "broker"
    return None


def log_outage(
    logger: logging.Logger, dependency: str, where: str, message: str, *args: object
) -> bool:
    """Log ``message % args`` as a warning (no traceback) unless the same dependency and place
    were logged less than :data:`LOG_INTERVAL_SECONDS` ago; return whether it was logged."""
    key = (dependency, where)
    now = time.monotonic()
    with _lock:
        last = _last_logged.get(key)
        if last is not None and now - last < LOG_INTERVAL_SECONDS:
            _held_back[key] = _held_back.get(key, 0) + 1
            return False
        _last_logged[key] = now
        held_back = _held_back.pop(key, 0)
    suffix = f" ({held_back} more since the last report)" if held_back else ""
    logger.warning(
        "%s unavailable (%s): " + message + "%s; reported at most once per %d s",
        dependency,
        where,
        *args,
        suffix,
        int(LOG_INTERVAL_SECONDS),
    )
    return True


def outage_in_chain(exc: BaseException | None) -> str | None:
    """:func:`outage_dependency` of ``exc`` or of any exception it was raised from."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        dependency = outage_dependency(exc)
        if dependency is not None:
            return dependency
        exc = exc.__cause__ or exc.__context__
    return None


class OutageLogFilter(logging.Filter):
    """Turns a library's error about an unreachable broker into :func:`log_outage` lines: one
    per interval, no traceback. Celery beat logs one with a traceback for every tick it cannot
    send and, while its first connection cannot be made (beat started, or sending for the first
    time, during the outage), one per connection retry with the error as a message argument.
    Other records pass unchanged."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        if exc is None and isinstance(record.args, tuple):
            exc = next((arg for arg in record.args if isinstance(arg, BaseException)), None)
        dependency = outage_in_chain(exc)
        if dependency is None:
            return True
        log_outage(
            logging.getLogger(record.name),
            dependency,
            record.name,
            "%s (%s)",
            record.getMessage().splitlines()[0][:300],
            type(exc).__name__,
        )
        return False


def reset_outage_log() -> None:
    """Forget what was logged (tests)."""
    with _lock:
        _last_logged.clear()
        _held_back.clear()
