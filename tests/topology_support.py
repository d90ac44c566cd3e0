"""The deployed topology of ``docker-compose.yml``, without Docker, for
``tests/deploy/test_deployed_topology.py``.

:func:`deployed_topology` starts, from a given ``bin`` folder (the venv the Herald wheel is
installed in), what the composition runs:

* a fresh PostgreSQL database on the local server, migrated by ``django-admin migrate`` (the
  ``migrate`` service), with static files collected as the image's build does;
* a private ``redis-server`` on a free port (broker, cache, shared rate limits);
* gunicorn with ``docker/gunicorn.conf.py`` (the ``web`` service), a Celery worker and beat with
  the compose commands;
* nginx in front of gunicorn on 127.0.0.1, configured by :func:`nginx_config`.

Every process runs in its own session (process group) with its output in a log file and the
current directory set to an empty folder (no ``PYTHONPATH``: only the installed package can be
imported). Every wait is bounded; on any failure inside the ``with`` block the tail of every log
is printed, and every process is stopped (its whole group killed if it lingers) and the database
dropped, whatever happened.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import quote

import requests

ROOT = Path(__file__).resolve().parent.parent
GUNICORN_CONF = ROOT / "docker" / "gunicorn.conf.py"
HOST = "127.0.0.1"
T = TypeVar("T")

# Settings read from the environment that must come from the topology, never from the shell
# that started pytest (PYTHON* also drops PYTHONPATH: processes import the installed wheel).
_DROPPED_PREFIXES = (
    "HERALD_",
    "DATABASE_URL",
    "REDIS_URL",
    "SECRET_KEY",
    "DJANGO_",
    "ALLOWED_HOSTS",
    "AWS_",
    "SERVICE_PROVIDER_",
    "WEB_CONCURRENCY",
    "FORWARDED_ALLOW_IPS",
    "GUNICORN_CMD_ARGS",
    "CELERY",
    "PYTHON",
    "VIRTUAL_ENV",
)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        return int(sock.getsockname()[1])


def port_open(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(0.5)
        return sock.connect_ex((HOST, port)) == 0


def nginx_binary() -> str | None:
    """nginx from the Debian package (``/usr/sbin`` is not on every PATH)."""
    found = shutil.which("nginx") or shutil.which("nginx", path="/usr/sbin:/usr/local/sbin")
    return found or None


def wait_until(
    predicate: Callable[[], T | None],
    *,
    timeout: float,
    what: str,
    interval: float = 0.25,
    logs: Callable[[], str] | None = None,
) -> T:
    """Poll ``predicate`` until it returns something truthy; fail after ``timeout`` seconds."""
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


class Process:
    """One long-running command in its own session, output to a log file."""

    def __init__(
        self,
        name: str,
        argv: list[str],
        *,
        env: dict[str, str],
        cwd: Path,
        log_path: Path,
        stop_signal: int = signal.SIGTERM,
    ) -> None:
        self.name = name
        self.argv = argv
        self.env = env
        self.cwd = cwd
        self.log_path = log_path
        self.stop_signal = stop_signal
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> Process:
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen(
                self.argv,
                cwd=self.cwd,
                env=self.env,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        return self

    @property
    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def _signal_group(self, sig: int) -> None:
        assert self.process is not None
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.process.pid, sig)

    def stop(self, timeout: float = 15) -> None:
        """The process's own stop signal, then SIGKILL to the whole group (children included)."""
        if self.process is None:
            return
        if self.process.poll() is None:
            self._signal_group(self.stop_signal)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(timeout=timeout)
        self._signal_group(signal.SIGKILL)  # whatever is left of the group
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=5)

    def log(self) -> str:
        try:
            return self.log_path.read_text(encoding="utf-8", errors="replace")
        except FileNotFoundError:
            return ""


def client(source_address: str | None = None) -> requests.Session:
    """A ``requests`` session that ignores proxy settings of the environment (traffic goes to
    127.0.0.1 only) and, given ``source_address`` (another loopback address such as
    ``127.0.0.2``), connects from it: a second client machine as the proxy sees it."""
    session = requests.Session()
    session.trust_env = False
    if source_address is not None:
        adapter = _SourceAddressAdapter(source_address)
        session.mount("http://", adapter)
    return session


class _SourceAddressAdapter(requests.adapters.HTTPAdapter):
    def __init__(self, source_address: str) -> None:
        self._source_address = source_address
        super().__init__()

    def init_poolmanager(self, *args: Any, **pool_kwargs: Any) -> None:
        pool_kwargs["source_address"] = (self._source_address, 0)
        super().init_poolmanager(*args, **pool_kwargs)


def nginx_config(*, prefix: Path, listen_port: int, upstream_port: int) -> str:
    """A reverse proxy as an operator would write it (README "Behind a reverse proxy"), with
    every path nginx writes kept under ``prefix``."""
    temp = {name: prefix / name for name in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")}
    return f"""daemon off;
worker_processes 1;
pid {prefix / "nginx.pid"};
error_log {prefix / "error.log"} info;
events {{
    worker_connections 256;
}}
http {{
    access_log {prefix / "access.log"};
    client_body_temp_path {temp["client_body"]};
    proxy_temp_path {temp["proxy"]};
    fastcgi_temp_path {temp["fastcgi"]};
    uwsgi_temp_path {temp["uwsgi"]};
    scgi_temp_path {temp["scgi"]};
    client_max_body_size 210m;

    upstream herald {{
        server {HOST}:{upstream_port};
        keepalive 8;
    }}
    server {{
        listen {HOST}:{listen_port};
        server_name _;
        location / {{
            proxy_pass http://herald;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_set_header Host $host;
            proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
            proxy_set_header X-Forwarded-Proto $scheme;
            proxy_set_header X-Forwarded-Ssl "";
            proxy_set_header X-Forwarded-Protocol "";
            proxy_read_timeout 60s;
        }}
    }}
}}
"""


@dataclass
class PostgresServer:
    """Where the local PostgreSQL server listens, and who may create databases on it."""

    host: str
    port: int
    user: str
    password: str = ""

    @classmethod
    def from_django_settings(cls, settings_dict: dict[str, Any]) -> PostgresServer:
        return cls(
            host=str(settings_dict.get("HOST") or HOST),
            port=int(settings_dict.get("PORT") or 5432),
            user=str(settings_dict.get("USER") or "postgres"),
            password=str(settings_dict.get("PASSWORD") or ""),
        )

    def url(self, database: str) -> str:
        credentials = quote(self.user, safe="")
        if self.password:
            credentials += ":" + quote(self.password, safe="")
        return f"postgres://{credentials}@{self.host}:{self.port}/{quote(database, safe='')}"

    def _admin(self, statement: str) -> None:
        import psycopg
        from psycopg import sql

        with psycopg.connect(
            host=self.host,
            port=self.port,
            user=self.user,
            password=self.password or None,
            dbname="postgres",
            autocommit=True,
            connect_timeout=10,
        ) as connection:
            connection.execute(sql.SQL(statement))  # type: ignore[arg-type]

    def create_database(self, name: str) -> None:
        assert name.isidentifier(), name
        self._admin(f'CREATE DATABASE "{name}"')

    def drop_database(self, name: str) -> None:
        assert name.isidentifier(), name
        self._admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@dataclass
class Topology:
    """The running composition. ``url`` is the proxy's origin: send every request there."""

    bin_dir: Path
    work_dir: Path
    postgres: PostgresServer
    extra_env: dict[str, str] = field(default_factory=dict)
    nginx_port: int = field(default_factory=free_port)
    gunicorn_port: int = field(default_factory=free_port)
    redis_port: int = field(default_factory=free_port)
    database: str = field(default_factory=lambda: f"herald_topology_{uuid.uuid4().hex[:10]}")
    processes: list[Process] = field(default_factory=list)
    one_shot_logs: list[Path] = field(default_factory=list)
    admin_email: str = ""
    admin_password: str = ""
    created_database: bool = False
    timings: list[tuple[str, float]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.run_dir = self.work_dir / "cwd"  # empty: nothing importable from the checkout
        self.data_dir = self.work_dir / "data"
        self.logs_dir = self.work_dir / "logs"
        for folder in (self.run_dir, self.data_dir, self.logs_dir):
            folder.mkdir(parents=True, exist_ok=True)
        # nginx's worker drops root to "nobody" and must reach its temporary folders, so its
        # prefix is a folder of its own that others may traverse (it holds no secret).
        self.nginx_dir = Path(tempfile.mkdtemp(prefix="herald-nginx-"))
        self.nginx_dir.chmod(0o755)
        self.secret_key = secrets.token_urlsafe(50)
        self.credentials_key = base64.urlsafe_b64encode(os.urandom(32)).decode()

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.nginx_port}"

    def command(self, name: str) -> str:
        path = self.bin_dir / name
        assert path.exists(), f"{path} is missing from the installed venv"
        return str(path)

    def env(self) -> dict[str, str]:
        """The app's environment, as an operator sets it behind one reverse proxy (plain HTTP)."""
        env = {k: v for k, v in os.environ.items() if not k.startswith(_DROPPED_PREFIXES)}
        env.update(
            {
                "PATH": f"{self.bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
                "PYTHONUNBUFFERED": "1",
                "PYTHONDONTWRITEBYTECODE": "1",
                "DJANGO_SETTINGS_MODULE": "config.settings",
                "HERALD_ENVIRONMENT": "production",
                "HERALD_DEPLOYMENT": "self_hosted",
                "HERALD_DATA_DIR": str(self.data_dir),
                "HERALD_STATIC_ROOT": str(self.work_dir / "static"),
                "DATABASE_URL": self.postgres.url(self.database),
                "REDIS_URL": f"redis://{HOST}:{self.redis_port}/0",
                "SECRET_KEY": self.secret_key,
                "HERALD_CREDENTIALS_KEY": self.credentials_key,
                "ALLOWED_HOSTS": HOST,
                "HERALD_PUBLIC_URL": self.url,
                "HERALD_HTTPS": "false",
                "HERALD_NUM_PROXIES": "1",
                "HERALD_CSRF_TRUSTED_ORIGINS": self.url,
                "FORWARDED_ALLOW_IPS": HOST,
                "HERALD_ALLOW_PRIVATE_PROVIDER_URLS": "true",
                "HERALD_LOG_LEVEL": "INFO",
                # One web process (the image's default is two): each costs seconds of CPU to
                # start, and one with four threads serves this test's traffic.
                "WEB_CONCURRENCY": "1",
                "HERALD_WEB_THREADS": "4",
            }
        )
        env.update(self.extra_env)
        return env

    # --- processes -----------------------------------------------------------------------------

    def start_one_shot(self, name: str, argv: list[str]) -> Process:
        """A command that must run to completion (like the compose ``migrate`` service)."""
        process = Process(
            name, argv, env=self.env(), cwd=self.run_dir, log_path=self.logs_dir / f"{name}.log"
        )
        self.one_shot_logs.append(process.log_path)
        return process.start()

    def finish(self, process: Process, *, timeout: float) -> None:
        """Wait for a one-shot command to exit 0 (killed when it takes longer)."""
        assert process.process is not None
        started = time.monotonic()
        try:
            code = process.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired as exc:
            raise AssertionError(f"{process.name} took longer than {timeout:.0f} s") from exc
        finally:
            process.stop(timeout=5)
        assert code == 0, f"{process.name} exited {code}"
        self.timings.append((f"{process.name} (after its start)", time.monotonic() - started))

    def start(self, name: str, argv: list[str], *, stop_signal: int = signal.SIGTERM) -> Process:
        process = Process(
            name,
            argv,
            env=self.env(),
            cwd=self.run_dir,
            log_path=self.logs_dir / f"{name}.log",
            stop_signal=stop_signal,
        )
        self.processes.append(process)
        return process.start()

    def wait_until(self, predicate: Callable[[], T | None], *, timeout: float, what: str) -> T:
        return wait_until(predicate, timeout=timeout, what=what)

    def wait_for_port(self, process: Process, port: int, *, timeout: float) -> None:
        def ready() -> bool:
            assert process.alive, f"{process.name} exited during start-up"
            return port_open(port)

        self.wait_until(ready, timeout=timeout, what=f"{process.name} to listen on {port}")

    @contextlib.contextmanager
    def diagnostics(self) -> Iterator[None]:
        """Print the tail of every log when the block fails (pytest shows captured output)."""
        try:
            yield
        except BaseException:
            print(self.logs())
            raise

    def logs(self, tail: int = 60) -> str:
        sources = [(p.name, p.log_path) for p in self.processes]
        sources += [(path.stem, path) for path in self.one_shot_logs]
        sources += [("nginx error.log", self.nginx_dir / "error.log")]
        sources += [("nginx access.log", self.nginx_dir / "access.log")]
        chunks = ["----- timings -----"]
        chunks += [f"{what}: {seconds:.1f} s" for what, seconds in self.timings]
        for name, path in sources:
            try:
                lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
            except FileNotFoundError:
                lines = ["(no log)"]
            chunks.append(f"----- {name} ({path}) -----\n" + "\n".join(lines[-tail:]))
        return "\n".join(chunks)

    # --- the composition ------------------------------------------------------------------------

    def start_all(self) -> None:
        redis = self.start(
            "redis",
            [
                "redis-server",
                "--bind",
                HOST,
                "--port",
                str(self.redis_port),
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                str(self.data_dir),
            ],
        )
        self.postgres.create_database(self.database)
        self.created_database = True
        self.wait_for_port(redis, self.redis_port, timeout=15)

        # The "migrate" service. The image's build also runs collectstatic, which costs about
        # 30 s of CPU here (WhiteNoise compresses every file, Brotli included); the settings serve
        # static files from the installed packages as well (WHITENOISE_USE_FINDERS), so the
        # /docs/ assets below come from the wheel's packages without it.
        (self.work_dir / "static").mkdir(exist_ok=True)
        django_admin = self.command("django-admin")
        self.finish(
            self.start_one_shot("migrate", [django_admin, "migrate", "--noinput"]), timeout=180
        )
        password_file = self.work_dir / "admin.json"
        ensure_admin = self.start_one_shot(
            "ensure_admin",
            [
                django_admin,
                "ensure_admin",
                "--email",
                "operator@example.com",
                "--password-file",
                str(password_file),
            ],
        )

        processes_started = time.monotonic()
        # web: the image's CMD, bound to loopback. SIGINT is gunicorn's quick shutdown.
        web = self.start(
            "gunicorn",
            [
                self.command("gunicorn"),
                "--config",
                str(GUNICORN_CONF),
                "--bind",
                f"{HOST}:{self.gunicorn_port}",
                "config.wsgi:application",
            ],
            stop_signal=signal.SIGINT,
        )
        worker = self.start(
            "worker",
            [
                # docker-compose.yml's worker command (pool and concurrency from the settings).
                self.command("celery"),
                "-A",
                "config",
                "worker",
                "--loglevel",
                "INFO",
            ],
        )
        self.start(
            "beat",
            [
                self.command("celery"),
                "-A",
                "config",
                "beat",
                "--loglevel",
                "INFO",
                "--schedule",
                str(self.data_dir / "celerybeat-schedule"),
            ],
        )
        nginx = nginx_binary()
        assert nginx is not None, "nginx is not installed"
        conf = self.nginx_dir / "nginx.conf"
        conf.write_text(
            nginx_config(
                prefix=self.nginx_dir,
                listen_port=self.nginx_port,
                upstream_port=self.gunicorn_port,
            ),
            encoding="utf-8",
        )
        proxy = self.start(
            "nginx",
            [
                nginx,
                "-c",
                str(conf),
                "-p",
                str(self.nginx_dir),
                "-e",
                str(self.nginx_dir / "error.log"),
            ],
            stop_signal=signal.SIGTERM,  # nginx's fast shutdown
        )

        self.finish(ensure_admin, timeout=90)
        admin = json.loads(password_file.read_text(encoding="utf-8"))
        self.admin_email, self.admin_password = admin["email"], admin["password"]
        self.wait_for_port(web, self.gunicorn_port, timeout=90)
        self.wait_for_port(proxy, self.nginx_port, timeout=20)

        def worker_ready() -> bool:
            assert worker.alive, "the Celery worker exited during start-up"
            return " ready." in worker.log()

        self.wait_until(worker_ready, timeout=90, what="the Celery worker to be ready")
        self.wait_until(self._healthy, timeout=30, what="/api/v1/health through the proxy")
        assert all(p.alive for p in self.processes), "a process exited during start-up"
        self.timings.append(
            ("web, worker, beat, nginx ready", time.monotonic() - processes_started)
        )

    def _healthy(self) -> bool:
        try:
            response = client().get(f"{self.url}/api/v1/health", timeout=5)
        except requests.RequestException:
            return False
        return response.status_code == 200

    def stop_all(self) -> None:
        for process in reversed(self.processes):
            started = time.monotonic()
            process.stop()
            self.timings.append((f"stop {process.name}", time.monotonic() - started))
        print("topology timings: " + ", ".join(f"{w} {t:.1f} s" for w, t in self.timings))
        if self.created_database:
            self.postgres.drop_database(self.database)
            self.created_database = False
        shutil.rmtree(self.nginx_dir, ignore_errors=True)


@contextlib.contextmanager
def deployed_topology(
    *, bin_dir: Path, work_dir: Path, postgres: PostgresServer, extra_env: dict[str, str]
) -> Iterator[Topology]:
    """Start the composition; on any failure print every log's tail; always stop everything."""
    topology = Topology(bin_dir=bin_dir, work_dir=work_dir, postgres=postgres, extra_env=extra_env)
    try:
        topology.start_all()
        yield topology
    except BaseException:
        print(topology.logs())
        raise
    finally:
        topology.stop_all()
