"""Real Celery processes for delivery tests: worker and beat started as separate process groups
on the test database, a private ``redis-server``, and bounded waits that show the process logs
when they time out.

The test process and its workers must agree on three things:

* the database: ``worker_database_url`` (root ``conftest.py``) is the test database
  pytest-django created (a SQLite file, or ``test_<name>`` on PostgreSQL);
* the broker: :func:`use_broker` points this process's Celery app (which the services use to
  enqueue on commit) at the broker the workers consume;
* the credentials key: workers get this process's ``SECRET_KEY`` and ``HERALD_CREDENTIALS_KEY``
  so they decrypt what the services encrypted.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import kombu.pools

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
T = TypeVar("T")

# Everything a worker reads from the environment that must come from the harness, never from
# the shell that started pytest.
_INHERITED_PREFIXES = ("HERALD_", "DATABASE_URL", "REDIS_URL", "SECRET_KEY", "DJANGO_")


def credential_keys() -> dict[str, str]:
    """What workers need to decrypt the credentials this process encrypts: its ``SECRET_KEY``,
    ``HERALD_ENVIRONMENT`` and ``HERALD_CREDENTIALS_KEY`` (when set), for ``settings_env``."""
    from django.conf import settings

    keys = {"SECRET_KEY": settings.SECRET_KEY, "HERALD_ENVIRONMENT": settings.HERALD_ENVIRONMENT}
    if settings.HERALD_CREDENTIALS_KEY:
        keys["HERALD_CREDENTIALS_KEY"] = settings.HERALD_CREDENTIALS_KEY
    return keys


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class ManagedProcess:
    """One command in its own session (process group), output to a log file."""

    def __init__(self, name: str, argv: list[str], env: dict[str, str], log_path: Path) -> None:
        self.name = name
        self.argv = argv
        self.env = env
        self.log_path = log_path
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> ManagedProcess:
        log = self.log_path.open("ab")
        try:
            self.process = subprocess.Popen(
                self.argv,
                cwd=ROOT,
                env=self.env,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        finally:
            log.close()
        return self

    @property
    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def _signal_group(self, sig: int) -> None:
        assert self.process is not None
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, sig)

    def kill(self) -> None:
        """SIGKILL the whole group (a prefork worker's pool children too): no clean-up runs."""
        if self.process is None:
            return
        self._signal_group(signal.SIGKILL)
        self.process.wait(timeout=10)

    def stop(self, timeout: float = 15) -> None:
        """SIGTERM (Celery's warm shutdown), then SIGKILL the group if it lingers."""
        if self.process is None:
            return
        if self.process.poll() is None:
            self._signal_group(signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(timeout=timeout)
        self._signal_group(signal.SIGKILL)  # stray pool children, if any
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=5)

    def log(self) -> str:
        try:
            return self.log_path.read_text(encoding="utf-8", errors="replace")
        except FileNotFoundError:
            return ""


@dataclass
class Broker:
    """Where tasks travel: ``url`` for Celery, and the environment that makes settings agree."""

    url: str
    transport_options: dict[str, Any]
    env: dict[str, str]

    @classmethod
    def filesystem(cls, data_dir: Path) -> Broker:
        """The embedded default: folders under ``HERALD_DATA_DIR/broker`` (config/settings.py)."""
        folders = {name: data_dir / "broker" / name for name in ("out", "processed", "control")}
        for folder in folders.values():
            folder.mkdir(parents=True, exist_ok=True)
        return cls(
            url="filesystem://",
            transport_options={
                "data_folder_in": str(folders["out"]),
                "data_folder_out": str(folders["out"]),
                "processed_folder": str(folders["processed"]),
                "store_processed": False,
                "control_folder": str(folders["control"]),
            },
            env={},
        )

    @classmethod
    def redis(cls, url: str) -> Broker:
        return cls(url=url, transport_options={"visibility_timeout": 3600}, env={"REDIS_URL": url})


@contextlib.contextmanager
def use_broker(broker: Broker) -> Iterator[None]:
    """Point this process's Celery app (used by ``tasks.*.delay`` on commit) at ``broker``."""
    from config.celery import app as celery_app

    app: Any = celery_app  # private pool attributes are not in the type stubs

    def reset_pools() -> None:
        from config.nudge import reset_broker_backoff

        reset_broker_backoff()  # a failure on the previous broker says nothing about this one
        if app._pool is not None:
            app._pool.force_close_all()
        app._pool = None
        # app.pool is kombu's process-wide pool for the broker URL: closing it leaves a closed
        # pool registered under that URL ("Acquire on closed pool" for the next test on the same
        # broker). kombu.pools.reset() closes every pool and empties the registries.
        kombu.pools.reset()
        with contextlib.suppress(AttributeError, KeyError):
            app.__dict__["amqp"]._producer_pool = None

    saved = (app.conf.broker_url, app.conf.broker_transport_options)
    reset_pools()
    app.conf.broker_url = broker.url
    app.conf.broker_transport_options = broker.transport_options
    try:
        yield
    finally:
        reset_pools()
        app.conf.broker_url, app.conf.broker_transport_options = saved


def wait_until(
    predicate: Callable[[], T | None],
    *,
    timeout: float,
    what: str,
    interval: float = 0.2,
    logs: Callable[[], str] | None = None,
) -> T:
    """Poll ``predicate`` until it returns something truthy; fail with ``what`` (and the process
    logs) after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        last = predicate()
        if last:
            return last
        time.sleep(interval)
    detail = f"timed out after {timeout:.0f} s waiting for {what}; last value: {last!r}"
    if logs is not None:
        detail += "\n" + logs()
    raise AssertionError(detail)


@dataclass
class DeliveryStack:
    """Celery worker(s) and beat for one database and broker."""

    database_url: str
    broker: Broker
    data_dir: Path
    settings_env: dict[str, str]  # this process's keys, so workers decrypt credentials
    overrides: dict[str, str] = field(default_factory=dict)
    processes: list[ManagedProcess] = field(default_factory=list)

    def env(self, **overrides: str) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(_INHERITED_PREFIXES)}
        env.update(
            {
                "DJANGO_SETTINGS_MODULE": "config.settings",
                "PYTHONUNBUFFERED": "1",
                "DATABASE_URL": self.database_url,
                "HERALD_DATA_DIR": str(self.data_dir),
                "HERALD_ALLOW_PRIVATE_PROVIDER_URLS": "true",
                "HERALD_LOG_LEVEL": "INFO",
                # Fast clocks, so faults resolve in seconds: one dispatcher tick a second, queued
                # work re-enqueued after 2 s, a claim expiring after 5 s, Retry-After winning
                # over a 0.5 s base backoff.
                "HERALD_DISPATCH_INTERVAL_SECONDS": "1",
                "HERALD_DISPATCH_STALE_SECONDS": "2",
                "HERALD_DELIVERY_LEASE_SECONDS": "5",
                "HERALD_PROVIDER_TIMEOUT_SECONDS": "1.5",
                "HERALD_RETRY_BASE_SECONDS": "0.5",
                "HERALD_RETRY_MAX_SECONDS": "2",
                # As docker-compose.yml runs the worker (PostgreSQL only; SQLite has no pool).
                "HERALD_DB_POOL_SIZE": "8",
            }
        )
        env.update(self.settings_env)
        env.update(self.broker.env)
        env.update(self.overrides)
        env.update(overrides)
        return env

    def _start(self, name: str, argv: list[str], env: dict[str, str]) -> ManagedProcess:
        log_path = self.data_dir / f"{name}-{uuid.uuid4().hex[:6]}.log"
        process = ManagedProcess(name, argv, env, log_path).start()
        self.processes.append(process)
        return process

    def start_worker(
        self, name: str = "worker", *, concurrency: int | None = None, **overrides: str
    ) -> ManagedProcess:
        """The shipped worker: its pool and concurrency are those of config/settings.py
        (threads, HERALD_WORKER_CONCURRENCY) unless ``concurrency`` is given."""
        node = f"{name}-{uuid.uuid4().hex[:6]}@%h"
        argv = [
            str(BIN / "celery"),
            "-A",
            "config",
            "worker",
            "--loglevel",
            "INFO",
            "-n",
            node,
            "--without-mingle",
            "--without-gossip",
            "--without-heartbeat",
        ]
        if concurrency is not None:
            argv += ["--concurrency", str(concurrency)]
        worker = self._start(name, argv, self.env(**overrides))
        wait_until(
            lambda: " ready." in worker.log() or not worker.alive,
            timeout=45,
            what=f"{name} to be ready",
            logs=self.logs,
        )
        assert worker.alive, f"{name} exited during start-up\n{self.logs()}"
        return worker

    def start_beat(self, name: str = "beat", **overrides: str) -> ManagedProcess:
        schedule = self.data_dir / f"celerybeat-{uuid.uuid4().hex[:6]}"
        argv = [
            str(BIN / "celery"),
            "-A",
            "config",
            "beat",
            "--loglevel",
            "INFO",
            "--schedule",
            str(schedule),
        ]
        return self._start(name, argv, self.env(**overrides))

    def stop(self) -> None:
        for process in reversed(self.processes):
            process.stop()
        self.processes.clear()

    def logs(self, tail: int = 80) -> str:
        chunks = []
        for process in self.processes:
            lines = process.log().splitlines()[-tail:]
            chunks.append(f"----- {process.name} ({process.log_path}) -----\n" + "\n".join(lines))
        return "\n".join(chunks)

    def wait_until(self, predicate: Callable[[], T | None], *, timeout: float = 60, what: str) -> T:
        return wait_until(predicate, timeout=timeout, what=what, logs=self.logs)


class RedisServer:
    """A private, non-persistent ``redis-server`` on a free port (restartable: its data is lost,
    like a broker restart without persistence)."""

    def __init__(self, data_dir: Path) -> None:
        self.port = free_port()
        self.data_dir = data_dir
        self.process: ManagedProcess | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> RedisServer:
        argv = [
            "redis-server",
            "--port",
            str(self.port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            str(self.data_dir),
        ]
        env = dict(os.environ)
        self.process = ManagedProcess("redis", argv, env, self.data_dir / "redis.log").start()
        wait_until(self.ping, timeout=15, what="redis-server to answer PING")
        return self

    def ping(self) -> bool:
        import redis

        try:
            return bool(redis.Redis(port=self.port, socket_timeout=1).ping())
        except redis.RedisError:
            return False

    def queued(self, queue: str = "celery") -> int:
        import redis

        return int(redis.Redis(port=self.port, socket_timeout=2).llen(queue))

    def restart(self) -> None:
        assert self.process is not None
        self.process.stop()
        self.start()

    def stop(self) -> None:
        if self.process is not None:
            self.process.stop()


@contextlib.contextmanager
def running_stack(
    database_url: str, data_dir: Path, *, overrides: dict[str, str] | None = None
) -> Iterator[DeliveryStack]:
    """A worker and a beat on the suite's broker (Redis when ``REDIS_URL`` is set, else a
    filesystem broker in ``data_dir``), this process's Celery app pointed at it; both stop on
    exit."""
    from django.conf import settings

    broker = Broker.redis(settings.REDIS_URL) if settings.REDIS_URL else Broker.filesystem(data_dir)
    stack = DeliveryStack(
        database_url=database_url,
        broker=broker,
        data_dir=data_dir,
        settings_env=credential_keys(),
        overrides=overrides or {},
    )
    with use_broker(broker):
        try:
            stack.start_beat()
            stack.start_worker()
            yield stack
        finally:
            stack.stop()
