"""``Account.profile_url``: its database default, then its backfill in batches.

1. The database default ``''``: the previous release inserts accounts without naming the column
   (it does not know it), which a NOT NULL column without a default refuses. A database that
   applied the first version of 0003 has no default; one that applied the current version has
   it already, and setting it again changes nothing. PostgreSQL only updates its catalogue (a
   lock of a few milliseconds).
2. The backfill, formerly inside 0003's schema change: in batches of ``BATCH`` accounts, each its
   own short transaction (one UPDATE), so no lock is held longer than one batch's update. The
   migration is not atomic: killed half-way, the next ``migrate`` runs it again and fills what is
   still empty (a database that ran the first 0003 finds nothing left to fill).
"""

from urllib.parse import quote

from django.db import migrations, transaction

from config.db.operations import EnsureDatabaseDefault

BATCH = 1000


def _profile_url(provider, instance_url, username):
    """A Mastodon profile from the instance and the local part of the handle, a Bluesky profile
    from the handle. A Telegram chat's public username is not stored (only its label), and
    Discord webhooks have no page: those stay empty until the account is connected again."""
    if provider == "mastodon" and instance_url.startswith(("https://", "http://")):
        local = username.split("@", 1)[0]
        if local:
            return f"{instance_url.rstrip('/')}/@{quote(local, safe='')}"
    elif provider == "bluesky" and username:
        return f"https://bsky.app/profile/{quote(username, safe='')}"
    return ""


def backfill_profile_urls(apps, schema_editor):
    Account = apps.get_model("publishing", "Account")
    alias = schema_editor.connection.alias
    pending = Account.objects.using(alias).filter(
        provider__in=["mastodon", "bluesky"], profile_url=""
    )
    after = None
    while True:
        page = pending.order_by("pk")
        if after is not None:
            page = page.filter(pk__gt=after)
        rows = list(page.values_list("pk", "provider", "instance_url", "username")[:BATCH])
        if not rows:
            return
        filled = [
            Account(pk=pk, profile_url=url[:500])
            for pk, provider, instance_url, username in rows
            if (url := _profile_url(provider, instance_url, username))
        ]
        with transaction.atomic(using=alias):  # one UPDATE per batch: row locks held briefly
            Account.objects.using(alias).bulk_update(filled, ["profile_url"])
        after = rows[-1][0]


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("publishing", "0005_account_token_lifecycle"),
    ]

    operations = [
        EnsureDatabaseDefault(model_name="account", name="profile_url"),
        migrations.RunPython(backfill_profile_urls, migrations.RunPython.noop, elidable=True),
    ]
