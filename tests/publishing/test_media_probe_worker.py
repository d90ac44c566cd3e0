"""Videos uploaded through the API are probed by a REAL Celery worker: the upload enqueues
``publishing.media_probe`` when it commits, a separate worker process reads the stored file and
records ``ready`` with the probe and a poster, or ``failed`` for a file cut short.

Runs on SQLite + the filesystem broker by default, PostgreSQL + Redis when
``DATABASE_URL``/``REDIS_URL`` are set (as ``tests/publishing/test_provider_feed_worker.py``).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.conf import settings as django_settings
from rest_framework.test import APIClient

from publishing.models import Media
from tests.publishing_support import API, ok, upload, use_media_root
from tests.video_support import make_video
from tests.worker_harness import Broker, DeliveryStack, credential_keys, use_broker

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True), pytest.mark.timeout(240)]


@pytest.fixture
def stack(
    worker_database_url: str, tmp_path_factory: pytest.TempPathFactory, settings: Any
) -> Iterator[DeliveryStack]:
    data_dir = tmp_path_factory.mktemp("herald-probe-worker")
    use_media_root(settings, data_dir / "media")  # where the worker's default storage reads
    redis_url = django_settings.REDIS_URL
    broker = Broker.redis(redis_url) if redis_url else Broker.filesystem(data_dir)
    stack = DeliveryStack(
        database_url=worker_database_url,
        broker=broker,
        data_dir=data_dir,
        settings_env=credential_keys(),
    )
    with use_broker(broker):
        try:
            stack.start_worker()
            yield stack
        finally:
            stack.stop()


def test_a_worker_probes_uploaded_videos(
    stack: DeliveryStack, owner_client: APIClient, workspace: Any
) -> None:
    whole = upload(owner_client, workspace, make_video("mov", seconds=2), name="clip.mov")
    video = make_video("webm", seconds=2)
    cut = upload(owner_client, workspace, video[: len(video) * 9 // 10], name="cut.webm")
    assert whole["status"] == cut["status"] == "processing"

    def settled() -> list[Media] | None:
        rows = list(Media.objects.filter(pk__in=[whole["id"], cut["id"]]))
        return rows if all(m.status != Media.Status.PROCESSING for m in rows) else None

    stack.wait_until(settled, timeout=90, what="both videos to be probed")
    ready = ok(owner_client.get(f"{API}/media/{whole['id']}"))
    assert ready["status"] == "ready"
    assert ready["probe"]["container"] == "mp4"  # H.264 in MOV, re-muxed by the worker
    assert Media.objects.get(pk=whole["id"]).probe["converted_from"]["container"] == "mov"
    assert ready["poster_url"]
    poster = owner_client.get(ready["poster_url"])
    assert poster.status_code == 200
    assert poster["Content-Type"] == "image/jpeg"
    failed = ok(owner_client.get(f"{API}/media/{cut['id']}"))
    assert failed["status"] == "failed"
    assert "truncated" in failed["failure_reason"]
    assert failed["poster_url"] is None
