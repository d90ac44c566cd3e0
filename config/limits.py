"""Where every limit keeps its state, and who the client is.

**The client address** of every per-client limit (the failed-authentication budget, the
anonymous API rate) is :func:`client_ip`. With ``HERALD_NUM_PROXIES`` unset (or 0) it is
``REMOTE_ADDR`` and ``X-Forwarded-For`` is ignored entirely: a client cannot choose the address
it is counted under. With ``HERALD_NUM_PROXIES=N`` each of the N trusted proxies appends the
address it received the request from, so the client is the N-th address from the right. When
the header holds fewer than N addresses (the request skipped an outer proxy), the leftmost one
is used: it is still an address one of the trusted proxies wrote, not one the client chose;
without the header, ``REMOTE_ADDR``. An IPv6 client is counted under its /64 (one subscriber's
network: rotating addresses inside it gains nothing), an IPv4-mapped one under its IPv4 address.
A request that carries ``X-Forwarded-For`` while ``HERALD_NUM_PROXIES`` is unset is logged once
per process: behind a proxy that setting is missing, and every client counts as the proxy.

**The store** is shared by every process of the instance:

* with ``REDIS_URL`` (the cache is Django's ``RedisCache``), Redis: a counter is ``SET NX EX`` +
  ``INCR`` + ``TTL`` in one pipelined round trip;
* otherwise a small SQLite file, ``HERALD_LIMITS_DB`` (``HERALD_DATA_DIR/limits.sqlite3``,
  created 0600, WAL mode, ``busy_timeout``), one connection per thread, each counter one atomic
  ``INSERT … ON CONFLICT DO UPDATE … RETURNING``; expired rows are purged at most once a minute
  per connection. (The in-process ``LocMemCache`` used to hold them: each gunicorn worker then
  had its own budget.)

Counters are fixed windows that start with their first hit, like ``SET NX EX``. When the store
cannot be reached (Redis down, SQLite locked for longer than its timeout), the counters **fail
open**: the request proceeds as if it were the first of its window, and the outage is logged
once per :data:`config.outages.LOG_INTERVAL_SECONDS` per process, without a traceback. Taking a
slot (:func:`acquire_slot`, discovery's one request in flight) is not a counter: its outage
propagates (a 503 ``dependency_unavailable`` problem); releasing one is best effort.
"""

from __future__ import annotations

import ipaddress
import logging
import math
import os
import sqlite3
import threading
import time
import weakref
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.cache import caches
from django.core.cache.backends.base import BaseCache
from django.core.cache.backends.redis import RedisCache
from rest_framework.settings import api_settings

from config.outages import REDIS_OUTAGE_ERRORS, log_outage

logger = logging.getLogger(__name__)

MAX_ADDRESS_LENGTH = 100  # an IPv6 address with a zone id fits; anything longer is cut
PURGE_INTERVAL_SECONDS = 60.0
SQLITE_BUSY_TIMEOUT_SECONDS = 5.0
MARK_TTL_MARGIN_SECONDS = 60

# The store cannot answer now: the request proceeds (the counters fail open).
STORE_OUTAGE_ERRORS: tuple[type[Exception], ...] = (*REDIS_OUTAGE_ERRORS, sqlite3.OperationalError)


# --- The client address --------------------------------------------------------------------


IPV6_CLIENT_PREFIX = 64  # an IPv6 client is its /64: a subscriber gets at least that many

_unset_proxies_warned = threading.Event()


def client_ip(request: Any) -> str:
    """The address every per-client limit counts ``request`` under (see the module docstring)."""
    meta = getattr(request, "META", None) or {}
    remote = str(meta.get("REMOTE_ADDR") or "unknown")
    forwarded = str(meta.get("HTTP_X_FORWARDED_FOR") or "")
    proxies = api_settings.NUM_PROXIES
    if not proxies:
        if forwarded and not _unset_proxies_warned.is_set():
            _unset_proxies_warned.set()
            logger.warning(
                "requests from %s carry X-Forwarded-For but HERALD_NUM_PROXIES is unset: every "
                "client behind that proxy shares one address for the rate limits; set "
                "HERALD_NUM_PROXIES to the number of trusted proxies",
                client_group(remote),
            )
        return client_group(remote)
    addresses = [part.strip() for part in forwarded.split(",") if part.strip()]
    if not addresses:
        return client_group(remote)
    return client_group(addresses[-min(int(proxies), len(addresses))])


def client_group(address: str) -> str:
    """``address`` as limits count it: an IPv6 address as its /64 network, an IPv4-mapped IPv6
    address as the IPv4 address, anything else (IPv4, a name) as given, cut to a bounded length."""
    address = address[:MAX_ADDRESS_LENGTH]
    try:
        parsed = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return address
    if isinstance(parsed, ipaddress.IPv6Address):
        if parsed.ipv4_mapped is not None:
            return str(parsed.ipv4_mapped)
        return str(ipaddress.IPv6Network((parsed, IPV6_CLIENT_PREFIX), strict=False))
    return str(parsed)


# --- Redis ---------------------------------------------------------------------------------


_clients: weakref.WeakKeyDictionary[BaseCache, Any] = weakref.WeakKeyDictionary()
_clients_lock = threading.Lock()


def redis_client(backend: BaseCache) -> Any | None:
    """One ``redis.Redis`` client per cache backend instance, built from the cache's settings
    (``CACHES["default"]``: its ``LOCATION`` and socket ``OPTIONS``), or ``None`` when the cache
    is not Redis. Django's ``RedisCache`` offers no pipelines or scripts, and builds a new client
    for every operation; a redis-py client is thread-safe and keeps its own connection pool.

    Keys for this client go through ``backend.make_key`` (prefix and version)."""
    if not isinstance(backend, RedisCache):
        return None
    client = _clients.get(backend)
    if client is None:
        with _clients_lock:
            client = _clients.get(backend)
            if client is None:
                import redis

                config: dict[str, Any] = settings.CACHES["default"]
                options = {
                    name: value
                    for name, value in config.get("OPTIONS", {}).items()
                    if name in ("socket_connect_timeout", "socket_timeout")
                }
                client = _clients[backend] = redis.Redis.from_url(config["LOCATION"], **options)
    return client


_RELEASE = """
if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end
return 0
"""


def _redis_read(client: Any, backend: BaseCache, key: str) -> int:
    value = client.get(backend.make_key(key))
    return 0 if value is None else int(value)


def _redis_hit(client: Any, backend: BaseCache, key: str, duration: int) -> tuple[int, float]:
    full_key = backend.make_key(key)
    pipe = client.pipeline(transaction=False)
    pipe.set(full_key, 0, ex=duration, nx=True)
    pipe.incr(full_key)
    pipe.ttl(full_key)
    _, count, ttl = pipe.execute()
    if ttl < 0:  # no expiry (should not happen): never let a counter live forever
        client.expire(full_key, duration)
        ttl = duration
    return int(count), float(ttl)


# --- SQLite --------------------------------------------------------------------------------

_SCHEMA = """
CREATE TABLE IF NOT EXISTS counters (
  key TEXT PRIMARY KEY, count INTEGER NOT NULL, expires REAL NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS slots (
  key TEXT PRIMARY KEY, token TEXT NOT NULL, expires REAL NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS shared_slots (
  key TEXT NOT NULL, token TEXT NOT NULL, expires REAL NOT NULL, PRIMARY KEY (key, token)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS marks (
  key TEXT PRIMARY KEY, until REAL NOT NULL
) WITHOUT ROWID;
"""

# A window that has ended starts again at 1; otherwise one more hit, same end.
_HIT = """
INSERT INTO counters (key, count, expires) VALUES (:key, 1, :ends)
ON CONFLICT (key) DO UPDATE SET
  count = CASE WHEN counters.expires <= :now THEN 1 ELSE counters.count + 1 END,
  expires = CASE WHEN counters.expires <= :now THEN excluded.expires ELSE counters.expires END
RETURNING count, expires
"""

_READ = "SELECT count FROM counters WHERE key = :key AND expires > :now"

# Taken when free or expired; a held slot leaves the row alone and returns nothing.
_ACQUIRE = """
INSERT INTO slots (key, token, expires) VALUES (:key, :token, :ends)
ON CONFLICT (key) DO UPDATE SET token = excluded.token, expires = excluded.expires
  WHERE slots.expires <= :now
RETURNING token
"""


class _Local(threading.local):
    connection: sqlite3.Connection | None = None
    path: str = ""
    pid: int = 0
    purged_at: float = 0.0


_local = _Local()
_inherited: list[sqlite3.Connection] = []  # connections opened before a fork: never used again


def limits_path() -> str:
    return str(settings.HERALD_LIMITS_DB)


def _create(path: str) -> None:
    """The file, owner-only from its creation (SQLite gives its -wal and -shm files the same
    permissions), in a folder created 0700 when missing."""
    try:
        Path(path).parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        os.close(os.open(path, os.O_RDWR | os.O_CREAT, 0o600))
    except OSError as exc:  # an unwritable data folder: reported like any store outage
        raise sqlite3.OperationalError(f"cannot create the limits store: {exc.strerror}") from exc


def _connection() -> sqlite3.Connection:
    path = limits_path()
    local = _local
    if local.connection is not None and local.path == path and local.pid == os.getpid():
        return local.connection
    if local.connection is not None:
        if local.pid == os.getpid():
            local.connection.close()
        else:  # SQLite connections must not cross a fork; keep it referenced, never touch it
            _inherited.append(local.connection)
    local.connection = None
    _create(path)
    connection = sqlite3.connect(
        path, timeout=SQLITE_BUSY_TIMEOUT_SECONDS, isolation_level=None, check_same_thread=False
    )
    connection.execute(f"PRAGMA busy_timeout = {int(SQLITE_BUSY_TIMEOUT_SECONDS * 1000)}")
    connection.execute("PRAGMA journal_mode = WAL")
    connection.execute("PRAGMA synchronous = NORMAL")  # counters need no fsync per commit
    connection.executescript(_SCHEMA)
    local.connection, local.path, local.pid, local.purged_at = connection, path, os.getpid(), 0.0
    return connection


def _sqlite_maybe_purge(connection: sqlite3.Connection, now: float) -> None:
    if now - _local.purged_at < PURGE_INTERVAL_SECONDS and now >= _local.purged_at:
        return
    _local.purged_at = now
    connection.execute("DELETE FROM counters WHERE expires <= ?", (now,))
    connection.execute("DELETE FROM slots WHERE expires <= ?", (now,))
    connection.execute("DELETE FROM shared_slots WHERE expires <= ?", (now,))
    connection.execute("DELETE FROM marks WHERE until <= ?", (now,))


def _sqlite_read(key: str) -> int:
    row = _connection().execute(_READ, {"key": key, "now": time.time()}).fetchone()
    return 0 if row is None else int(row[0])


def _sqlite_hit(key: str, duration: int) -> tuple[int, float]:
    connection = _connection()
    now = time.time()
    _sqlite_maybe_purge(connection, now)
    rows = connection.execute(_HIT, {"key": key, "now": now, "ends": now + duration}).fetchall()
    count, ends = rows[0]
    return int(count), float(ends) - now


def clear() -> None:
    """Forget every counter and slot of the SQLite store (tests; Redis is cleared with the cache)."""
    connection = _connection()
    connection.execute("DELETE FROM counters")
    connection.execute("DELETE FROM slots")
    connection.execute("DELETE FROM shared_slots")
    connection.execute("DELETE FROM marks")


# --- The counters --------------------------------------------------------------------------


def _failed_open(exc: Exception, where: str) -> None:
    store = "redis" if isinstance(exc, REDIS_OUTAGE_ERRORS) else "limits store"
    log_outage(
        logger, store, where, "rate limits are not enforced meanwhile (%s)", type(exc).__name__
    )


def read_count(key: str) -> int:
    """The count of the window ``key`` (0 when it has none, or when the store is unreachable)."""
    backend = caches["default"]
    client = redis_client(backend)
    try:
        return _redis_read(client, backend, key) if client is not None else _sqlite_read(key)
    except STORE_OUTAGE_ERRORS as exc:
        _failed_open(exc, "limits")
        return 0


def window_hit(key: str, duration: int) -> tuple[int, float]:
    """Count one request in the window of ``key``: (requests in the window, seconds left).
    Unreachable store: ``(0, duration)``, i.e. admitted."""
    backend = caches["default"]
    client = redis_client(backend)
    try:
        if client is not None:
            return _redis_hit(client, backend, key, duration)
        return _sqlite_hit(key, duration)
    except STORE_OUTAGE_ERRORS as exc:
        _failed_open(exc, "limits")
        return 0, float(duration)


# --- Slots (one holder at a time) ----------------------------------------------------------


def acquire_slot(key: str, token: str, ttl: int) -> bool:
    """Take the slot ``key`` for ``token`` for at most ``ttl`` seconds; False while another
    holder has it. An unreachable store raises (see the module docstring)."""
    backend = caches["default"]
    client = redis_client(backend)
    if client is not None:
        return bool(client.set(backend.make_key(key), token, nx=True, ex=ttl))
    connection = _connection()
    now = time.time()
    _sqlite_maybe_purge(connection, now)
    params = {"key": key, "token": token, "now": now, "ends": now + ttl}
    return bool(connection.execute(_ACQUIRE, params).fetchall())


def release_slot(key: str, token: str) -> None:
    """Free the slot ``key`` if ``token`` still holds it. Best effort: when the store cannot be
    reached, the slot expires on its own."""
    backend = caches["default"]
    client = redis_client(backend)
    try:
        if client is not None:
            client.eval(_RELEASE, 1, backend.make_key(key), token)
        else:
            _connection().execute("DELETE FROM slots WHERE key = ? AND token = ?", (key, token))
    except STORE_OUTAGE_ERRORS as exc:
        log_outage(
            logger,
            "redis" if client is not None else "limits store",
            "slots",
            "slot left to expire (%s)",
            type(exc).__name__,
        )


# --- Shared slots (up to N holders at a time) and "paused until" marks ---------------------
#
# Delivery's politeness caps (publishing/services/delivery.py): a send holds one slot of its
# account and one of its provider host while it calls the provider. A slot has a lease (it
# expires on its own, so a killed worker cannot hold one forever). Unlike :func:`acquire_slot`
# these fail open: when the store cannot be reached, sends proceed uncapped (logged once per
# interval), as the counters do.

# KEYS: the slot sets, then the mark. ARGV: now, lease end, key ttl, token, then one limit per
# slot set. Returns {1, 0} when every slot was taken, {0, 0} when one set is full, {0, until}
# while the mark is set.
_ACQUIRE_SHARED = """
local n = #KEYS - 1
local now = tonumber(ARGV[1])
local mark_end = tonumber(redis.call('GET', KEYS[#KEYS]) or '0') or 0
if mark_end > now then return {0, tostring(mark_end)} end
for i = 1, n do
  redis.call('ZREMRANGEBYSCORE', KEYS[i], '-inf', now)
  if redis.call('ZCARD', KEYS[i]) >= tonumber(ARGV[4 + i]) then return {0, '0'} end
end
for i = 1, n do
  redis.call('ZADD', KEYS[i], ARGV[2], ARGV[4])
  redis.call('EXPIRE', KEYS[i], ARGV[3])
end
return {1, '0'}
"""

# KEYS[1] the mark; ARGV: until, ttl. A later end wins; an earlier one leaves the mark alone.
_MARK = """
local current = tonumber(redis.call('GET', KEYS[1]) or '0') or 0
if tonumber(ARGV[1]) > current then redis.call('SET', KEYS[1], ARGV[1], 'EX', ARGV[2]) end
return 0
"""


_scripts: weakref.WeakKeyDictionary[Any, dict[str, Any]] = weakref.WeakKeyDictionary()


def _script(client: Any, name: str, source: str) -> Any:
    """``client.register_script(source)``, once per client (redis-py sends ``EVALSHA``)."""
    registered = _scripts.setdefault(client, {})
    script = registered.get(name)
    if script is None:
        script = registered[name] = client.register_script(source)
    return script


def _sqlite_acquire_shared(
    connection: sqlite3.Connection,
    slots: list[tuple[str, int]],
    token: str,
    now: float,
    ttl: float,
    mark: str,
) -> tuple[bool, float]:
    if mark:
        row = connection.execute("SELECT until FROM marks WHERE key = ?", (mark,)).fetchone()
        if row is not None and float(row[0]) > now:
            return False, float(row[0])
    for key, limit in slots:
        connection.execute("DELETE FROM shared_slots WHERE key = ? AND expires <= ?", (key, now))
        (held,) = connection.execute(
            "SELECT count(*) FROM shared_slots WHERE key = ?", (key,)
        ).fetchone()
        if held >= limit:
            return False, 0.0
    connection.executemany(
        "INSERT OR REPLACE INTO shared_slots (key, token, expires) VALUES (?, ?, ?)",
        [(key, token, now + ttl) for key, _ in slots],
    )
    return True, 0.0


def acquire_shared_slots(
    slots: list[tuple[str, int]], token: str, ttl: float, *, unless_marked: str = ""
) -> tuple[bool, float]:
    """Take one slot of every ``(key, limit)`` in ``slots`` for ``token`` (all or none), each
    set holding at most ``limit`` unexpired slots; a slot expires after ``ttl`` seconds. Not
    taken while the mark ``unless_marked`` is set. Returns ``(taken, until)``: ``until`` is the
    end of that mark (epoch seconds), else 0. Unreachable store: ``(True, 0)`` (fail open)."""
    backend = caches["default"]
    client = redis_client(backend)
    now = time.time()
    try:
        if client is not None:
            keys = [backend.make_key(key) for key, _ in slots] + [
                backend.make_key(unless_marked or "-")
            ]
            args = [
                now,
                now + ttl,
                max(1, math.ceil(ttl)),
                token,
                *(int(limit) for _, limit in slots),
            ]
            taken, until = _script(client, "_herald_acquire_shared", _ACQUIRE_SHARED)(
                keys=keys, args=args
            )
            return bool(taken), float(until)
        connection = _connection()
        _sqlite_maybe_purge(connection, now)
        connection.execute("BEGIN IMMEDIATE")
        try:
            taken, until = _sqlite_acquire_shared(connection, slots, token, now, ttl, unless_marked)
        except BaseException:
            connection.execute("ROLLBACK")
            raise
        connection.execute("COMMIT")
        return taken, until
    except STORE_OUTAGE_ERRORS as exc:
        log_outage(
            logger,
            "redis" if client is not None else "limits store",
            "in-flight slots",
            "provider in-flight caps are not enforced meanwhile (%s)",
            type(exc).__name__,
        )
        return True, 0.0


def release_shared_slots(keys: list[str], token: str) -> None:
    """Give back ``token``'s slots of ``keys``. Best effort: unreachable, they expire on their own."""
    backend = caches["default"]
    client = redis_client(backend)
    try:
        if client is not None:
            pipe = client.pipeline(transaction=False)
            for key in keys:
                pipe.zrem(backend.make_key(key), token)
            pipe.execute()
        else:
            _connection().executemany(
                "DELETE FROM shared_slots WHERE key = ? AND token = ?",
                [(key, token) for key in keys],
            )
    except STORE_OUTAGE_ERRORS as exc:
        log_outage(
            logger,
            "redis" if client is not None else "limits store",
            "in-flight slots",
            "slot left to expire (%s)",
            type(exc).__name__,
        )


def held_shared_slots(key: str) -> int:
    """How many unexpired slots of ``key`` are held (0 when the store is unreachable)."""
    backend = caches["default"]
    client = redis_client(backend)
    now = time.time()
    try:
        if client is not None:
            return int(client.zcount(backend.make_key(key), f"({now}", "+inf"))
        row = (
            _connection()
            .execute("SELECT count(*) FROM shared_slots WHERE key = ? AND expires > ?", (key, now))
            .fetchone()
        )
        return int(row[0])
    except STORE_OUTAGE_ERRORS as exc:
        _failed_open(exc, "in-flight slots")
        return 0


def set_mark(key: str, until: float) -> None:
    """Set the mark ``key`` until ``until`` (epoch seconds); a later end already set is kept.
    Best effort: an unreachable store loses the mark (logged)."""
    backend = caches["default"]
    client = redis_client(backend)
    # The stored end decides; the key's expiry only cleans up, with a margin for clocks.
    ttl = max(1, math.ceil(until - time.time())) + MARK_TTL_MARGIN_SECONDS
    try:
        if client is not None:
            _script(client, "_herald_mark", _MARK)(keys=[backend.make_key(key)], args=[until, ttl])
        else:
            _connection().execute(
                "INSERT INTO marks (key, until) VALUES (?, ?) "
                "ON CONFLICT (key) DO UPDATE SET until = max(marks.until, excluded.until)",
                (key, until),
            )
    except STORE_OUTAGE_ERRORS as exc:
        log_outage(
            logger,
            "redis" if client is not None else "limits store",
            "marks",
            "mark %s not recorded (%s)",
            key,
            type(exc).__name__,
        )


def read_mark(key: str) -> float:
    """The end of the mark ``key`` (epoch seconds) while it is set, else 0 (also when the store
    is unreachable)."""
    backend = caches["default"]
    client = redis_client(backend)
    now = time.time()
    try:
        if client is not None:
            value = client.get(backend.make_key(key))
            until = 0.0 if value is None else float(value)
        else:
            row = _connection().execute("SELECT until FROM marks WHERE key = ?", (key,)).fetchone()
            until = 0.0 if row is None else float(row[0])
    except STORE_OUTAGE_ERRORS as exc:
        _failed_open(exc, "marks")
        return 0.0
    return until if until > now else 0.0


# --- Daily quotas (several counters at once) -----------------------------------------------

DAY_SECONDS = 24 * 60 * 60


def daily_quota_hit(quotas: list[tuple[str, int]]) -> int:
    """Count one use against each ``(key, limit)`` of ``quotas``, each a window of a day: 0 when
    every count is within its limit, else the seconds until the latest of the exceeded windows
    ends (a ``Retry-After``). Refused attempts count too: a client that keeps trying does not
    get its quota back sooner. Unreachable store: admitted, like every counter."""
    wait = 0.0
    for key, limit in quotas:
        count, seconds_left = window_hit(key, DAY_SECONDS)
        if count > limit:
            wait = max(wait, seconds_left)
    return math.ceil(wait)
