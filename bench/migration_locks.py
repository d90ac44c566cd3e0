#!/usr/bin/env python
"""Migration locks benchmark: how long each migration blocks reads and writes on a big database.

    .venv/bin/python bench/migration_locks.py               # or: make bench-migration-locks
    .venv/bin/python bench/migration_locks.py --before <commit>

What it does (figures in bench/README.md, "Migration locks"):

1. seeds ``herald_bench_migration_locks`` in SQL (bench/scale.py's bulk seeders) with 50,000
   accounts (1,000 workspaces of 50, every provider in turn), 300,000 publications, 600,000
   destinations and 100,000 media rows (no files behind them), on the current schema;
2. migrates publishing back to ``0002`` (the previous release's schema: this release's
   publishing migrations are the ones measured), with this checkout's code;
3. runs ``manage.py migrate`` forward (with ``--before <commit>``, first the migrations of that
   commit, then back to ``0002`` and this checkout's) while two things watch it:

   - a sampler reads ``pg_locks`` every 5 ms: each lock the migrating backend holds on a table
     that existed before, classed as blocking reads (ACCESS EXCLUSIVE) or writes (SHARE and
     stronger), from when it was first seen to when it was last seen, and which migration was
     running (from migrate's own output);
   - probes read one row of, and update one row of (in a transaction rolled back), each of
     accounts, publications, destinations and media in a loop: the longest any of them waited
     is what a request would have waited;

4. prints the longest lock of each migration and class, writes
   ``bench/results/migration_locks.json`` and drops the database (unless ``--keep``).

Exit status 1 when a migration of this checkout holds a blocking lock longer than
``--max-seconds`` (1.0).
"""

from __future__ import annotations

import argparse
import io
import os
import re
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # `python bench/…` puts bench/ first on the path, not ROOT
    sys.path.insert(0, str(ROOT))

from bench._common import (  # noqa: E402
    drop_database,
    ensure_database,
    git_revision,
    loadavg,
    machine,
    write_results,
)
from bench.scale import (  # noqa: E402
    BENCH_CREDENTIALS_KEY,
    BENCH_SECRET_KEY,
    bulk_accounts,
    bulk_filler_workspaces,
    bulk_publications,
    configure,
)

URL = "postgres://postgres@127.0.0.1:5432/herald_bench_migration_locks"
RESULTS = ROOT / "bench" / "results" / "migration_locks.json"
APP_NAME = "herald-bench-migrate"
SAMPLE_SECONDS = 0.005
PROBED = (
    "publishing_account",
    "publishing_publication",
    "publishing_destination",
    "publishing_media",
)
# What each lock mode blocks: plain reads wait only for ACCESS EXCLUSIVE; INSERT/UPDATE/DELETE
# (ROW EXCLUSIVE) also wait for SHARE, SHARE ROW EXCLUSIVE and EXCLUSIVE.
BLOCKS_READS = {"AccessExclusiveLock"}
BLOCKS_WRITES = {"ShareLock", "ShareRowExclusiveLock", "ExclusiveLock", "AccessExclusiveLock"}
APPLYING = re.compile(r"Applying (\S+)\.\.\.")


def psql_url(url: str) -> str:
    return url.replace("postgres://", "postgresql://", 1)


def child_env(url: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HERALD_", "AWS_"))}
    env.pop("REDIS_URL", None)
    env.update(
        DATABASE_URL=url,
        SECRET_KEY=BENCH_SECRET_KEY,
        HERALD_ENVIRONMENT="local",
        HERALD_CREDENTIALS_KEY=BENCH_CREDENTIALS_KEY,
        HERALD_LOG_LEVEL="WARNING",
        PGAPPNAME=APP_NAME,
        PYTHONUNBUFFERED="1",
    )
    return env


# --- Seeding ---------------------------------------------------------------------------------


def seed(args: argparse.Namespace) -> dict[str, Any]:
    """Migrate and seed (in this process: Django set up on the benchmark database)."""
    import secrets

    from django.core.management import call_command
    from django.db import connection, transaction
    from django.utils import timezone

    from providers import credentials
    from publishing.models import Account, Destination, Media, ProviderApp, Publication
    from workspaces.access import Actor
    from workspaces.models import User
    from workspaces.services import organization_create

    started = time.perf_counter()
    call_command("migrate", interactive=False, verbosity=0)
    now = timezone.now()
    owner = User.objects.create_user("bench-locks@example.invalid", secrets.token_urlsafe(24))
    organization = organization_create(actor=Actor(user=owner), name="Bench migration locks")
    sealed = credentials.encrypt({"access_token": secrets.token_urlsafe(24)})
    apps = [
        str(
            ProviderApp.objects.create(
                provider="mastodon",
                instance_url=f"https://m{index}.example",
                redirect_uri="http://127.0.0.1/api/v1/accounts/oauth/callback",
                credentials_encrypted=credentials.encrypt({"client_id": "c"}),
            ).pk
        )
        for index in range(7)
    ]
    with transaction.atomic(), connection.cursor() as cursor:
        workspaces = bulk_filler_workspaces(
            cursor, organization_id=organization.pk, count=args.workspaces, now=now, tag="l"
        )
        bulk_accounts(
            cursor,
            workspace_ids=workspaces,
            per_workspace=args.accounts // args.workspaces,
            credentials=sealed,
            mastodon_app_ids=apps,
            now=now,
            tag="locks",
        )
        bulk_publications(
            cursor,
            workspace_ids=workspaces,
            per_workspace=args.publications // args.workspaces,
            accounts_per_workspace=args.accounts // args.workspaces,
            destinations=2,
            events=1,
            owner_id=owner.pk,
            now=now,
        )
        bulk_media(cursor, workspace_ids=workspaces, count=args.media, owner_id=owner.pk, now=now)
    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE")
    rows = {
        "accounts": Account.objects.count(),
        "publications": Publication.objects.count(),
        "destinations": Destination.objects.count(),
        "media": Media.objects.count(),
    }
    print(f"  seeded {rows} in {time.perf_counter() - started:.0f} s", flush=True)
    return rows


def bulk_media(
    cursor: Any, *, workspace_ids: list[Any], count: int, owner_id: Any, now: Any
) -> None:
    """``count`` media rows spread over the workspaces, with only the columns the previous
    release's schema has (the later ones take their database defaults): publishing.0010 adds
    columns to this table. Rows only; no files behind them (no migration reads a file)."""
    cursor.execute(
        """
        INSERT INTO publishing_media (id, workspace_id, file, name, mime_type, size_bytes,
                                      checksum_sha256, alt_text, created_by_id, created_at)
        SELECT gen_random_uuid(), (%(workspaces)s::uuid[])[1 + n %% cardinality(%(workspaces)s::uuid[])],
               'media/bench/' || n || '.jpg', 'bench-' || n || '.jpg', 'image/jpeg', 100000 + n,
               md5(n::text) || md5((n + 1)::text), '', %(owner)s, %(now)s - n * interval '1 second'
        FROM generate_series(1, %(count)s) AS n
        """,
        {
            "workspaces": [str(w) for w in workspace_ids],
            "owner": owner_id,
            "now": now,
            "count": count,
        },
    )


# --- Watching a migrate ----------------------------------------------------------------------


class Watch:
    """The sampler and the probes of one ``migrate`` run."""

    def __init__(self, url: str) -> None:
        import psycopg

        self.url = url
        self.stop = threading.Event()
        self.current = "(start)"
        self.locks: dict[tuple[Any, ...], list[Any]] = {}  # key -> [first, last, migration]
        self.probe_waits: dict[tuple[str, str, str], float] = {}  # (migration, table, kind)
        with psycopg.connect(psql_url(url), autocommit=True) as conn:
            self.tables = {
                row[0]
                for row in conn.execute(
                    "SELECT relname FROM pg_class WHERE relkind = 'r' "
                    "AND relnamespace = 'public'::regnamespace"
                )
            }
            self.ids = {
                table: conn.execute(f'SELECT id FROM "{table}" LIMIT 1').fetchone()  # noqa: S608
                for table in PROBED
            }
        self.threads = [threading.Thread(target=self._sample, daemon=True)]
        self.threads += [
            threading.Thread(target=self._probe, args=(table,), daemon=True) for table in PROBED
        ]

    def start(self) -> None:
        for thread in self.threads:
            thread.start()

    def finish(self) -> None:
        self.stop.set()
        for thread in self.threads:
            thread.join(timeout=30)

    def _sample(self) -> None:
        import psycopg

        with psycopg.connect(psql_url(self.url), autocommit=True) as conn:
            while not self.stop.is_set():
                now = time.monotonic()
                rows = conn.execute(
                    "SELECT a.pid, a.xact_start, c.relname, l.mode FROM pg_locks l "
                    "JOIN pg_class c ON c.oid = l.relation "
                    "JOIN pg_stat_activity a ON a.pid = l.pid "
                    "WHERE a.application_name = %s AND l.granted AND c.relkind = 'r'",
                    [APP_NAME],
                ).fetchall()
                for pid, xact_start, table, mode in rows:
                    if table not in self.tables:
                        continue  # a table made by this migrate: nobody else uses it yet
                    key = (pid, xact_start, table, mode)
                    seen = self.locks.setdefault(key, [now, now, self.current])
                    seen[1] = now
                time.sleep(SAMPLE_SECONDS)

    def _probe(self, table: str) -> None:
        import psycopg

        row = self.ids[table]
        with psycopg.connect(psql_url(self.url), autocommit=True) as conn:
            while not self.stop.is_set():
                for kind in ("read", "write"):
                    started = time.monotonic()
                    migration = self.current
                    if kind == "read":
                        conn.execute(f'SELECT 1 FROM "{table}" LIMIT 1')  # noqa: S608
                    elif row is not None:
                        with conn.transaction(force_rollback=True):
                            conn.execute(
                                f'UPDATE "{table}" SET id = id WHERE id = %s',  # noqa: S608
                                [row[0]],
                            )
                    waited = time.monotonic() - started
                    key = (migration, table, kind)
                    self.probe_waits[key] = max(self.probe_waits.get(key, 0.0), waited)
                time.sleep(0.02)


def run_migrate(source: Path, url: str, target: list[str], watch: Watch | None) -> float:
    """``manage.py migrate [target]`` of the tree at ``source``; its seconds."""
    started = time.monotonic()
    process = subprocess.Popen(
        [sys.executable, "manage.py", "migrate", *target, "--noinput", "-v", "1"],
        cwd=source,
        env={**child_env(url), "PYTHONPATH": str(source)},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        bufsize=0,
    )
    assert process.stdout is not None
    # "Applying X..." is written (and flushed) when X starts, its "OK" when it ends: read what
    # comes as it comes, not by lines.
    pending = ""
    while chunk := os.read(process.stdout.fileno(), 4096):
        pending += chunk.decode(errors="replace")
        for match in APPLYING.finditer(pending):
            if watch is not None:
                watch.current = match.group(1)
        *done, pending = pending.split("\n")
        for line in done:
            if "pplying" in line or "Error" in line:
                print("    " + line.rstrip(), flush=True)
        last = list(APPLYING.finditer(pending))
        if last:  # keep the started migration's text for its "OK", without matching it twice
            pending = pending[last[-1].start() :].replace("Applying", "applying", 1)
    if process.wait() != 0:
        raise SystemExit(f"migrate {' '.join(target)} failed")
    return time.monotonic() - started


def measure(source: Path, url: str) -> dict[str, Any]:
    watch = Watch(url)
    watch.start()
    try:
        seconds = run_migrate(source, url, [], watch)
    finally:
        watch.finish()
    per_migration: dict[str, dict[str, Any]] = {}
    for (_, _, table, mode), (first, last, migration) in watch.locks.items():
        held = last - first + SAMPLE_SECONDS
        entry = per_migration.setdefault(
            migration, {"blocks_reads": [0.0, ""], "blocks_writes": [0.0, ""]}
        )
        for kind, modes in (("blocks_reads", BLOCKS_READS), ("blocks_writes", BLOCKS_WRITES)):
            if mode in modes and held > entry[kind][0]:
                entry[kind] = [round(held, 3), f"{table} {mode}"]
    probes: dict[str, dict[str, Any]] = {}
    for (migration, table, kind), waited in watch.probe_waits.items():
        if migration == "(start)":
            continue
        slot = probes.setdefault(migration, {"read": 0.0, "write": 0.0})
        slot[kind] = round(max(slot[kind], waited), 3)
        slot[f"{kind}_table"] = table if waited >= slot[kind] else slot.get(f"{kind}_table", "")
    return {"migrate_seconds": round(seconds, 1), "locks": per_migration, "probes": probes}


def export(commit: str, target: Path) -> Path:
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", "--format=tar", commit], check=True, capture_output=True
    ).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(target, filter="data")
    return target


def report(label: str, result: dict[str, Any]) -> None:
    print(f"\n{label}: migrate took {result['migrate_seconds']} s")
    print(f"  {'migration':48} {'blocks reads':>22} {'blocks writes':>22} {'probe r/w':>14}")
    for migration in sorted(set(result["locks"]) | set(result["probes"])):
        locks = result["locks"].get(migration, {})
        reads = locks.get("blocks_reads", [0.0, ""])
        writes = locks.get("blocks_writes", [0.0, ""])
        probe = result["probes"].get(migration, {})
        print(
            f"  {migration:48} {reads[0]:>8.3f} s {reads[1][:12]:12} {writes[0]:>8.3f} s "
            f"{writes[1][:12]:12} {probe.get('read', 0):.2f}/{probe.get('write', 0):.2f} s"
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--accounts", type=int, default=50_000)
    parser.add_argument("--publications", type=int, default=300_000)
    parser.add_argument("--workspaces", type=int, default=1_000)
    parser.add_argument("--media", type=int, default=100_000)
    parser.add_argument("--before", help="also measure this commit's migrations first")
    parser.add_argument("--max-seconds", type=float, default=1.0)
    parser.add_argument("--keep", action="store_true", help="keep the database afterwards")
    args = parser.parse_args()

    ensure_database(URL, fresh=True)
    configure(URL)
    results: dict[str, Any] = {
        "revision": git_revision(),
        "machine": machine(),
        "loadavg_before": loadavg(),
        "rows": seed(args),
        "runs": {},
    }
    from django.db import connections

    connections.close_all()
    try:
        runs = []
        with tempfile.TemporaryDirectory(prefix="herald-locks-") as folder:
            if args.before:
                runs.append((f"before ({args.before[:10]})", export(args.before, Path(folder))))
            runs.append(("this checkout", ROOT))
            for label, source in runs:
                print(f"\n{label}: back to the previous release's schema (publishing 0002)")
                run_migrate(ROOT, URL, ["publishing", "0002"], None)
                print(f"{label}: migrate forward, watched", flush=True)
                results["runs"][label] = measure(source, URL)
        results["loadavg_after"] = loadavg()
    finally:
        if not args.keep:
            drop_database(URL)
    for label, result in results["runs"].items():
        report(label, result)
    write_results(results, RESULTS)
    worst = max(
        (
            entry[kind][0]
            for entry in results["runs"]["this checkout"]["locks"].values()
            for kind in ("blocks_reads", "blocks_writes")
        ),
        default=0.0,
    )
    print(f"\nlongest blocking lock of this checkout's migrations: {worst:.3f} s")
    return 1 if worst > args.max_seconds else 0


if __name__ == "__main__":
    sys.exit(main())
