"""The deployed topology of ``docker-compose.yml``, without Docker, for
``tests/deploy/test_deployed_topology.py``.

:func:`deployed_topology` starts, from a given ``bin`` folder (the venv the Herald wheel is
installed in), what the composition runs:

* a fresh PostgreSQL database on the local server, migrated by the ``migrate`` service's command,
  with static files collected as the image's build does;
* a private ``redis-server`` on a free port (broker, cache, shared rate limits);
* the ``web`` service (the image's CMD: gunicorn with ``docker/gunicorn.conf.py``), one ``worker``
  and ``beat``, each with its compose ``command``;
* nginx in front of gunicorn on 127.0.0.1, configured by :func:`nginx_config`.

Each app process gets the environment compose gives its container (:meth:`Topology.env`), read
from ``docker-compose.yml`` and the ``Dockerfile`` at run time, so that a change there reaches the
test: the image's ``ENV``, then the operator's ``.env`` (``env_file``), then the service's
``environment`` with every ``${VAR...}`` interpolated from that ``.env`` (:func:`interpolate`;
unset variables take the file's defaults). Only what must point at this test's own services and
folders is overridden (:meth:`Topology.overrides`). Commands are the compose ``command`` (the
image's CMD for ``web``) with the container paths and the bind address replaced
(:meth:`Topology.argv`).

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
import re
import secrets
import shlex
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import quote

import requests
import yaml

from tests.shipped_support import stages

ROOT = Path(__file__).resolve().parent.parent
GUNICORN_CONF = ROOT / "docker" / "gunicorn.conf.py"
COMPOSE_FILE = ROOT / "docker-compose.yml"
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


# --- docker-compose.yml and the image, read as compose reads them -------------------------------


class ComposeError(AssertionError):
    """docker-compose.yml says something this reading of it does not model (or cannot resolve)."""


def load_compose(path: Path = COMPOSE_FILE) -> dict[str, Any]:
    """The compose file; YAML itself resolves its anchors and ``<<`` merge keys."""
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert isinstance(data, dict), path
    return data


_INTERPOLATION = re.compile(
    r"\$(?:(?P<escaped>\$)"
    r"|\{(?P<braced>[A-Za-z_][A-Za-z0-9_]*)(?:(?P<op>:?[-?+])(?P<arg>[^{}$]*))?\}"
    r"|(?P<named>[A-Za-z_][A-Za-z0-9_]*))"
)


def interpolate(text: str, variables: Mapping[str, str]) -> str:
    """Compose's interpolation of ``text`` with ``variables`` (what compose reads from the shell
    and ``.env``): ``$$``, ``$VAR``, ``${VAR}``, ``${VAR:-default}`` / ``${VAR-default}``,
    ``${VAR:?error}`` / ``${VAR?error}``, ``${VAR:+alt}`` / ``${VAR+alt}``; with ``:`` an empty
    value counts as unset. Anything else with a ``$`` (a nested default) is refused."""
    leftover = _INTERPOLATION.sub("", text)
    if "$" in leftover:
        raise ComposeError(f"interpolation not modelled here: {text!r}")

    def resolve(match: re.Match[str]) -> str:
        if match["escaped"]:
            return "$"
        name = match["braced"] or match["named"]
        op, argument = match["op"] or "", match["arg"] or ""
        value = variables.get(name)
        is_set = value is not None and (value != "" or not op.startswith(":"))
        if op.endswith("-"):
            return value if is_set and value is not None else argument
        if op.endswith("?"):
            if not is_set or value is None:
                raise ComposeError(f"${{{name}}} is required: {argument}")
            return value
        if op.endswith("+"):
            return argument if is_set else ""
        return value or ""

    return _INTERPOLATION.sub(resolve, text)


def _scalar(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def service_environment(
    compose: Mapping[str, Any], service: str, dotenv: Mapping[str, str]
) -> dict[str, str]:
    """The variables compose sets in ``service``'s container from the compose file and the
    operator's ``.env`` (``dotenv``): the ``env_file`` entries, then ``environment`` (which takes
    precedence), interpolated with ``dotenv``. The image's ``ENV`` comes below both."""
    spec = compose["services"][service]
    env: dict[str, str] = {}
    env_files = spec.get("env_file") or []
    for entry in [env_files] if isinstance(env_files, str | dict) else env_files:
        path = entry if isinstance(entry, str) else entry["path"]
        if path != ".env":
            raise ComposeError(f"{service}: env_file {path!r} is not modelled (only .env)")
        env.update(dotenv)
    environment = spec.get("environment") or {}
    if isinstance(environment, dict):
        entries: list[tuple[str, Any]] = list(environment.items())
    else:  # the list form: "NAME=value", or "NAME" alone (passed through from the shell/.env)
        entries = [
            (name, value if sep else None)
            for name, sep, value in (str(item).partition("=") for item in environment)
        ]
    for name, raw in entries:
        if raw is None:  # no value: the variable of that name where compose runs, if set
            if name in dotenv:
                env[name] = dotenv[name]
            else:
                env.pop(name, None)
        else:
            env[name] = interpolate(_scalar(raw), dotenv)
    return env


def service_command(compose: Mapping[str, Any], service: str) -> list[str] | None:
    """``service``'s ``command`` (interpolated without variables: none may be needed), or None
    when it runs the image's CMD."""
    command = compose["services"][service].get("command")
    if command is None:
        return None
    argv = shlex.split(command) if isinstance(command, str) else [_scalar(a) for a in command]
    return [interpolate(argument, {}) for argument in argv]


def image_environment() -> dict[str, str]:
    """The ``ENV`` of the image's runtime stage (``Dockerfile``), values as written: one may
    still refer to a variable (``$PATH``, a build argument); :meth:`Topology.env` refuses any
    such value it has not overridden."""
    _, _, runtime = stages()[-1]
    env: dict[str, str] = {}
    for keyword, arguments in runtime:
        if keyword != "ENV":
            continue
        for token in shlex.split(arguments):
            name, sep, value = token.partition("=")
            if not sep:
                raise ComposeError(f"ENV {arguments!r}: only the NAME=value form is modelled")
            env[name] = value
    return env


def image_command() -> list[str]:
    """The image's CMD (the ``web`` service runs it)."""
    _, _, runtime = stages()[-1]
    commands = [arguments for keyword, arguments in runtime if keyword == "CMD"]
    assert commands, "the runtime stage has a CMD"
    value = json.loads(commands[-1])
    assert isinstance(value, list), f"CMD in exec form: {commands[-1]!r}"
    return [str(argument) for argument in value]


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

    # What the running process really has (Linux /proc), as opposed to what it was given.

    def environ(self) -> dict[str, str]:
        """The environment the process started with."""
        assert self.process is not None
        assert self.alive, f"{self.name} is not running"
        raw = Path(f"/proc/{self.process.pid}/environ").read_bytes()
        pairs = (item.decode(errors="replace").partition("=") for item in raw.split(b"\0"))
        return {name: value for name, _, value in pairs if name}

    def pids(self) -> list[int]:
        """The process and every other process of its group (its children)."""
        assert self.process is not None
        found = []
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                stat = (entry / "stat").read_text(encoding="utf-8", errors="replace")
            except OSError:
                continue  # exited meanwhile
            # After "(comm)": state, ppid, pgrp.
            if int(stat.rsplit(")", 1)[1].split()[2]) == self.process.pid:
                found.append(int(entry.name))
        return found

    def connections_to(self, port: int) -> int:
        """Established TCP connections to ``port`` held by the group's processes: their socket
        descriptors matched by inode with the kernel's tables."""
        inodes = set()
        for pid in self.pids():
            with contextlib.suppress(OSError):
                for fd in Path(f"/proc/{pid}/fd").iterdir():
                    with contextlib.suppress(OSError):
                        target = os.readlink(fd)
                        if target.startswith("socket:["):
                            inodes.add(target[len("socket:[") : -1])
        count = 0
        for table in ("/proc/net/tcp", "/proc/net/tcp6"):
            with contextlib.suppress(FileNotFoundError):
                for line in Path(table).read_text(encoding="ascii").splitlines()[1:]:
                    fields = line.split()
                    remote, state, inode = fields[2], fields[3], fields[9]
                    established = state == "01"
                    if established and int(remote.rsplit(":", 1)[1], 16) == port:
                        count += inode in inodes
        return count


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
    """A reverse proxy as an operator would write it (docs/operations.md "Behind a reverse proxy"), with
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
    """The running composition. ``url`` is the proxy's origin: send every request there.
    ``extra_env``: more lines of the operator's ``.env`` (:meth:`dotenv`)."""

    bin_dir: Path
    work_dir: Path
    postgres: PostgresServer
    extra_env: dict[str, str] = field(default_factory=dict)
    compose: dict[str, Any] = field(default_factory=load_compose)
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
        self.static_dir = self.work_dir / "static"
        self.secret_key = secrets.token_urlsafe(50)
        self.credentials_key = base64.urlsafe_b64encode(os.urandom(32)).decode()
        self.postgres_password = secrets.token_hex(24)

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.nginx_port}"

    def command(self, name: str) -> str:
        path = self.bin_dir / name
        assert path.exists(), f"{path} is missing from the installed venv"
        return str(path)

    # --- the environment compose gives each app container ---------------------------------------

    def dotenv(self) -> dict[str, str]:
        """The operator's ``.env`` next to docker-compose.yml (its step 1), for this test: compose
        interpolates the file's ``${...}`` from it and passes it to every app container."""
        return {
            # Step 1's required secrets, fresh for every topology.
            "SECRET_KEY": self.secret_key,
            "HERALD_CREDENTIALS_KEY": self.credentials_key,
            # Required by the file; it only feeds compose's DATABASE_URL, which overrides() replaces.
            "POSTGRES_PASSWORD": self.postgres_password,
            # The proxy's origin (ALLOWED_HOSTS and HERALD_CSRF_TRUSTED_ORIGINS default to it).
            "HERALD_PUBLIC_URL": self.url,
            # The compose file's plain-HTTP trial setting: this nginx serves http:// only.
            "HERALD_HTTPS": "false",
            # docs/operations.md "Behind a reverse proxy": one proxy (nginx) appends to X-Forwarded-For...
            "HERALD_NUM_PROXIES": "1",
            # ...and gunicorn honours its scheme headers from the proxy's address.
            "FORWARDED_ALLOW_IPS": HOST,
            # The stand-in providers listen on 127.0.0.1.
            "HERALD_ALLOW_PRIVATE_PROVIDER_URLS": "true",
            # One web process (compose's default is two): each costs seconds of CPU to start,
            # and one with four threads serves this test's traffic.
            "WEB_CONCURRENCY": "1",
            **self.extra_env,
        }

    def overrides(self) -> dict[str, str]:
        """What must differ from a container's environment: this test's services and folders."""
        return {
            # The installed venv's commands first (the image's PATH starts with /opt/venv/bin).
            "PATH": f"{self.bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
            # The image's /data (the media and beat-schedule volumes) and /app/static.
            "HERALD_DATA_DIR": str(self.data_dir),
            "HERALD_STATIC_ROOT": str(self.static_dir),
            # Compose's "postgres" and "redis" services: this test's database and redis-server.
            "DATABASE_URL": self.postgres.url(self.database),
            "REDIS_URL": f"redis://{HOST}:{self.redis_port}/0",
        }

    # Image ENV set from a build argument: no image is built here, so it stays unset.
    _NOT_FROM_IMAGE = ("HERALD_SOURCE_REVISION",)

    def env(self, service: str | None) -> dict[str, str]:
        """The environment of ``service``'s container (docker-compose.yml), for a process here:
        the image's ENV, then :func:`service_environment` (``.env``, then the service's
        ``environment``), then :meth:`overrides`; below them the shell's variables, less any
        setting of the app's or Python's. ``None``: the shell's only (redis-server, nginx)."""
        env = {k: v for k, v in os.environ.items() if not k.startswith(_DROPPED_PREFIXES)}
        if service is None:
            return env
        image = {k: v for k, v in image_environment().items() if k not in self._NOT_FROM_IMAGE}
        env.update(image)
        env.update(service_environment(self.compose, service, self.dotenv()))
        env.update(self.overrides())
        unresolved = sorted(n for n, value in image.items() if "$" in value and env[n] == value)
        if unresolved:
            raise ComposeError(f"image ENV that refers to a variable, not overridden: {unresolved}")
        return env

    def argv(self, service: str) -> list[str]:
        """``service``'s ``command`` (the image's CMD when compose gives none) for this machine:
        the program from the installed venv; the container's paths and bind address replaced."""
        argv = service_command(self.compose, service) or image_command()
        replaced = {
            # COPY docker/gunicorn.conf.py /app/ in the Dockerfile.
            "/app/gunicorn.conf.py": str(GUNICORN_CONF),
            # The container's port, published on loopback (HERALD_HTTP_BIND's default).
            "0.0.0.0:8000": f"{HOST}:{self.gunicorn_port}",
        }
        mapped = [self.command(argv[0])]
        for argument in argv[1:]:
            if argument in replaced:
                mapped.append(replaced[argument])
            elif argument.startswith("/data/"):  # HERALD_DATA_DIR and the volumes below it
                path = self.data_dir / argument.removeprefix("/data/")
                path.parent.mkdir(parents=True, exist_ok=True)
                mapped.append(str(path))
            elif argument.startswith("/"):
                raise ComposeError(f"{service}: no counterpart here for {argument!r}")
            else:
                mapped.append(argument)
        return mapped

    # --- processes -----------------------------------------------------------------------------

    def start_one_shot(self, name: str, argv: list[str], *, service: str) -> Process:
        """A command that must run to completion (like the compose ``migrate`` service) in the
        environment of ``service``'s container."""
        process = Process(
            name,
            argv,
            env=self.env(service),
            cwd=self.run_dir,
            log_path=self.logs_dir / f"{name}.log",
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

    def start(
        self,
        name: str,
        argv: list[str],
        *,
        service: str | None,
        stop_signal: int = signal.SIGTERM,
    ) -> Process:
        """A long-running process in the environment of ``service``'s container (None: not an
        app process)."""
        process = Process(
            name,
            argv,
            env=self.env(service),
            cwd=self.run_dir,
            log_path=self.logs_dir / f"{name}.log",
            stop_signal=stop_signal,
        )
        self.processes.append(process)
        return process.start()

    def process(self, name: str) -> Process:
        """A running process of the composition by name (``gunicorn``, ``worker``, ``beat``...)."""
        return next(p for p in self.processes if p.name == name)

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
            service=None,
        )
        self.postgres.create_database(self.database)
        self.created_database = True
        self.wait_for_port(redis, self.redis_port, timeout=15)

        # The "migrate" service. The image's build also runs collectstatic, which costs about
        # 30 s of CPU here (WhiteNoise compresses every file, Brotli included); the settings serve
        # static files from the installed packages as well (WHITENOISE_USE_FINDERS), so the
        # /docs/ assets below come from the wheel's packages without it.
        self.static_dir.mkdir(exist_ok=True)
        self.finish(
            self.start_one_shot("migrate", self.argv("migrate"), service="migrate"), timeout=180
        )
        password_file = self.work_dir / "admin.json"
        # An operator's one-off command: `docker compose run --rm migrate django-admin ...`.
        ensure_admin = self.start_one_shot(
            "ensure_admin",
            [
                self.command("django-admin"),
                "ensure_admin",
                "--email",
                "operator@example.com",
                "--password-file",
                str(password_file),
            ],
            service="migrate",
        )

        processes_started = time.monotonic()
        # SIGINT is gunicorn's quick shutdown. One worker replica (compose starts
        # HERALD_WORKER_PROCESSES, 2): the pool and the concurrency are per process.
        web = self.start("gunicorn", self.argv("web"), service="web", stop_signal=signal.SIGINT)
        worker = self.start("worker", self.argv("worker"), service="worker")
        self.start("beat", self.argv("beat"), service="beat")
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
            service=None,
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
