"""Videos are probed by the ``publishing.media_probe`` task after upload: real MP4, MOV and WebM
files made here end ``ready`` with their facts and a JPEG poster behind a signed URL; files that
pass the upload's first-frame check but do not hold a whole video end ``failed`` with a reason,
never ``ready``. Images are ready at once."""

from __future__ import annotations

import hashlib
import io
from pathlib import Path
from typing import Any

import av
import pytest
from django.core.files.base import ContentFile
from PIL import Image
from rest_framework.test import APIClient

from providers.base import VideoRule
from publishing import tasks
from publishing.models import Media
from publishing.services.video_rules import video_messages
from tests.publishing_support import API, ok, upload
from tests.video_support import FORMATS, make_video

pytestmark = pytest.mark.django_db


def probed(client: APIClient, media_id: str) -> Any:
    tasks.media_probe(media_id)  # the task body, run here as a worker runs it
    return ok(client.get(f"{API}/media/{media_id}"), 200)


@pytest.mark.parametrize("kind", sorted(FORMATS))
def test_a_real_video_is_processing_then_ready_with_its_facts_and_poster(
    owner_client: APIClient, workspace: Any, media_storage: Path, kind: str
) -> None:
    video = make_video(kind, width=64, height=36, seconds=2, audio=True)
    record = upload(owner_client, workspace, video, name=f"clip.{kind}")
    assert record["mime_type"] == FORMATS[kind][2]
    assert record["status"] == "processing"
    assert record["probe"] is None
    assert record["poster_url"] is None
    record = probed(owner_client, record["id"])
    assert record["status"] == "ready", record["failure_reason"]
    assert record["failure_reason"] == ""
    probe = record["probe"]
    # MOV (H.264/AAC) is re-muxed and WebM (VP9/Opus) re-encoded: every one ends MP4 H.264/AAC.
    assert record["mime_type"] == "video/mp4"
    assert probe["container"] == "mp4"
    assert (probe["video_codec"], probe["audio_codec"]) == ("h264", "aac")
    stored = Media.objects.get(pk=record["id"]).probe  # the API shows the probe's own fields
    if kind != "mp4":
        assert stored["conversion"] == ("transcode" if kind == "webm" else "remux")
        assert stored["converted_from"] == {
            "container": kind,
            "video_codec": "vp9" if kind == "webm" else "h264",
            "audio_codec": "opus" if kind == "webm" else "aac",
        }
    else:
        assert "conversion" not in stored
    assert probe["has_audio"] is True
    assert probe["duration_seconds"] == pytest.approx(2.0, abs=0.15)
    assert (probe["width"], probe["height"]) == (64, 36)
    assert (record["width"], record["height"]) == (64, 36)
    assert probe["frame_rate"] == pytest.approx(10.0)
    assert probe["rotation"] == 0
    assert probe["bit_rate"] > 0
    poster = owner_client.get(record["poster_url"])
    assert poster.status_code == 200
    assert poster["Content-Type"] == "image/jpeg"
    with Image.open(io.BytesIO(b"".join(poster.streaming_content))) as image:  # type: ignore[attr-defined]
        assert image.format == "JPEG"
        assert image.size == (64, 36)


def test_a_rotated_video_reports_its_rotation_and_an_upright_poster(
    owner_client: APIClient, workspace: Any, media_storage: Path
) -> None:
    record = upload(owner_client, workspace, make_video(rotation=90), name="phone.mp4")
    record = probed(owner_client, record["id"])
    assert record["probe"]["rotation"] == 90
    poster = owner_client.get(record["poster_url"])
    with Image.open(io.BytesIO(b"".join(poster.streaming_content))) as image:  # type: ignore[attr-defined]
        assert image.size == (36, 64)


def test_a_poster_url_with_a_forged_token_opens_nothing(
    owner_client: APIClient, workspace: Any, media_storage: Path
) -> None:
    record = probed(owner_client, upload(owner_client, workspace, make_video(), name="c.mp4")["id"])
    forged = record["poster_url"].replace("/poster.jpg", "").rsplit(".", 1)[0] + "." + "A" * 43
    assert owner_client.get(forged + "/poster.jpg").status_code == 404


def test_probing_twice_changes_nothing(
    owner_client: APIClient, workspace: Any, media_storage: Path
) -> None:
    record = upload(owner_client, workspace, make_video(), name="clip.mp4")
    first = probed(owner_client, record["id"])
    second = probed(owner_client, record["id"])
    assert second["status"] == first["status"] == "ready"
    posters = [p for p in media_storage.rglob("*poster*") if p.is_file()]
    assert len(posters) == 1


def test_an_image_is_ready_at_once(
    owner_client: APIClient, workspace: Any, media_storage: Path
) -> None:
    record = upload(owner_client, workspace)
    assert record["status"] == "ready"
    assert record["probe"] is None
    assert record["poster_url"] is None


def _stored_video(workspace: Any, payload: bytes, mime: str) -> Media:
    """A row as the upload leaves it, with bytes the upload's quick check would have let by."""
    media = Media(
        workspace=workspace,
        name="clip",
        mime_type=mime,
        size_bytes=len(payload),
        checksum_sha256="0" * 64,
        status=Media.Status.PROCESSING,
    )
    media.file.save(f"{media.pk}.bin", ContentFile(payload), save=False)
    media.save()
    return media


@pytest.mark.parametrize("kind", sorted(FORMATS))
def test_what_is_not_a_whole_video_ends_failed_never_ready(
    owner_client: APIClient, workspace: Any, media_storage: Path, kind: str
) -> None:
    video = make_video(kind, seconds=2)
    mime = FORMATS[kind][2]
    cases = {
        "magic bytes and garbage": video[:8] + b"garbage!" * 64,
        "four magic bytes only": video[:4] + b"\x00" * 300,
        "cut in half": video[: len(video) // 2],
        "last tenth missing": video[: len(video) * 9 // 10],
    }
    for case, payload in cases.items():
        media = _stored_video(workspace, payload, mime)
        record = probed(owner_client, str(media.pk))
        assert record["status"] == "failed", case
        assert record["failure_reason"], case
        assert record["poster_url"] is None, case
    assert not list(media_storage.rglob("*poster*"))


def test_a_video_whose_file_is_gone_ends_failed(
    owner_client: APIClient, workspace: Any, media_storage: Path
) -> None:
    record = upload(owner_client, workspace, make_video(), name="clip.mp4")
    for path in media_storage.rglob("*.mp4"):
        path.unlink()
    record = probed(owner_client, record["id"])
    assert record["status"] == "failed"
    assert "cannot be read" in record["failure_reason"]


def test_an_mp4_with_its_index_first_missing_its_last_bytes_ends_failed(
    owner_client: APIClient, workspace: Any, media_storage: Path, tmp_path: Path
) -> None:
    """The index (moov) before the samples: every frame but the last one's tail is there, so
    the first frame decodes and the demuxer reads to the end; the index says bytes are missing."""
    path = tmp_path / "faststart.mp4"
    with av.open(str(path), mode="w", format="mp4", options={"movflags": "faststart"}) as out:
        stream = out.add_stream("libx264", rate=10)
        stream.width, stream.height, stream.pix_fmt = 64, 36, "yuv420p"
        for index in range(20):
            frame = av.VideoFrame(64, 36, "yuv420p")
            for plane in frame.planes:
                plane.update(bytes([index * 20 % 256]) * plane.buffer_size)
            out.mux(stream.encode(frame))
        out.mux(stream.encode(None))
    video = path.read_bytes()
    assert video.index(b"moov") < video.index(b"mdat")
    whole = _stored_video(workspace, video, "video/mp4")
    assert probed(owner_client, str(whole.pk))["status"] == "ready"
    cut = _stored_video(workspace, video[:-8], "video/mp4")
    record = probed(owner_client, str(cut.pk))
    assert record["status"] == "failed"
    assert "truncated" in record["failure_reason"]


# --- Conversion to MP4 (H.264/AAC) in the probe step -------------------------------------------


def _packets(data: bytes, fmt: str) -> list[bytes]:
    with av.open(io.BytesIO(data), format=fmt) as container:
        return [bytes(p) for p in container.demux(container.streams.video[0]) if p.size]


def _stored_names(root: Path) -> set[str]:
    return {p.name for p in root.rglob("*") if p.is_file() and "poster" not in p.name}


def test_h264_aac_in_matroska_is_remuxed_to_mp4_without_re_encoding(
    owner_client: APIClient,
    workspace: Any,
    media_storage: Path,
    django_capture_on_commit_callbacks: Any,
) -> None:
    video = make_video("webm", muxer="matroska", codec="libx264", audio=True, audio_codec="aac")
    record = upload(owner_client, workspace, video, name="clip.mkv")
    assert record["mime_type"] == "video/webm"  # EBML: read by the Matroska demuxer
    with django_capture_on_commit_callbacks(execute=True):  # the upload's file is deleted then
        record = probed(owner_client, record["id"])
    assert record["status"] == "ready", record["failure_reason"]
    probe = record["probe"]
    assert (probe["container"], probe["video_codec"], probe["audio_codec"]) == (
        "mp4",
        "h264",
        "aac",
    )
    item = Media.objects.get(pk=record["id"])
    assert item.probe["conversion"] == "remux"
    stored = item.file.read()
    assert (item.mime_type, item.size_bytes) == ("video/mp4", len(stored))
    assert item.file.name.endswith(".mp4")
    assert item.checksum_sha256 == hashlib.sha256(stored).hexdigest()
    assert _packets(stored, "mp4") == _packets(video, "matroska")  # the same H.264 packets
    assert _stored_names(media_storage) == {Path(item.file.name).name}  # the upload is gone
    content = owner_client.get(f"{API}/media/{record['id']}/content")
    assert b"".join(content.streaming_content) == stored  # type: ignore[attr-defined]


def test_mpeg4_part_2_is_re_encoded_to_h264(
    owner_client: APIClient, workspace: Any, media_storage: Path
) -> None:
    video = make_video("mp4", codec="mpeg4", seconds=2, audio=True)
    record = probed(owner_client, upload(owner_client, workspace, video, name="old.mp4")["id"])
    assert record["status"] == "ready", record["failure_reason"]
    probe = Media.objects.get(pk=record["id"]).probe
    assert (probe["video_codec"], probe["audio_codec"], probe["conversion"]) == (
        "h264",
        "aac",
        "transcode",
    )
    assert probe["converted_from"]["video_codec"] == "mpeg4"
    assert probe["duration_seconds"] == pytest.approx(2.0, abs=0.15)
    with av.open(io.BytesIO(Media.objects.get(pk=record["id"]).file.read()), format="mp4") as out:
        frames = list(out.decode(video=0))
    assert len(frames) == 20
    assert (frames[0].width, frames[0].height) == (64, 36)


@pytest.mark.parametrize(("kind", "codec"), [("mov", "libx264"), ("mp4", "mpeg4")])
def test_a_rotated_video_keeps_its_rotation_when_remuxed_or_re_encoded(
    owner_client: APIClient, workspace: Any, media_storage: Path, kind: str, codec: str
) -> None:
    video = make_video(kind, codec=codec, rotation=270)
    record = probed(
        owner_client, upload(owner_client, workspace, video, name=f"phone.{kind}")["id"]
    )
    probe = record["probe"]
    assert (probe["container"], probe["video_codec"], probe["rotation"]) == ("mp4", "h264", 270)


@pytest.mark.parametrize("bound", ["time", "size"])
def test_a_conversion_past_its_bounds_keeps_the_upload_and_the_rules_say_what_to_change(
    owner_client: APIClient, workspace: Any, media_storage: Path, settings: Any, bound: str
) -> None:
    if bound == "time":
        settings.HERALD_TRANSCODE_MAX_SECONDS = 0
    else:
        settings.HERALD_TRANSCODE_MAX_BYTES = 100
    video = make_video("webm", seconds=2)
    record = probed(owner_client, upload(owner_client, workspace, video, name="clip.webm")["id"])
    assert record["status"] == "ready", record["failure_reason"]
    probe = Media.objects.get(pk=record["id"]).probe
    assert (probe["container"], probe["video_codec"]) == ("webm", "vp9")
    assert ("longer than 0 s" if bound == "time" else "larger than 100 bytes") in probe[
        "conversion_stopped"
    ]
    item = Media.objects.get(pk=record["id"])
    assert item.file.read() == video
    assert _stored_names(media_storage) == {Path(item.file.name).name}  # no partial file left
    messages = video_messages(VideoRule(network="X", delivers=True), item)
    assert (
        messages[0] == "X: videos in MP4, MOV; this one is webm. Re-export it as MP4 (H.264/AAC)."
    )
    assert messages[1] == "X: video encoded as H264; this one is vp9. Re-encode it as H.264."
    assert messages[2].startswith("Herald did not convert it: Converting it to MP4")


def test_housekeeping_sends_a_lost_probe_again_and_only_for_stale_videos(
    owner_client: APIClient,
    workspace: Any,
    media_storage: Path,
    settings: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The upload's probe message can be lost while the broker is down; the hourly housekeeping
    finds videos still processing past any probe's bound and sends the probe again."""
    from datetime import timedelta

    from django.utils import timezone

    from publishing.services import housekeeping

    lost = upload(owner_client, workspace, make_video("mp4", seconds=1), name="lost.mp4")
    fresh = upload(owner_client, workspace, make_video("mp4", seconds=1), name="fresh.mp4")
    bound = settings.HERALD_TRANSCODE_MAX_SECONDS + 90 + 300
    Media.objects.filter(pk=lost["id"]).update(
        created_at=timezone.now() - timedelta(seconds=bound + 1)
    )
    sent: list[tuple[str, str]] = []  # the broker is the edge: record what would be sent
    monkeypatch.setattr(
        housekeeping, "nudge", lambda task, media_id: sent.append((task.name, media_id))
    )
    assert housekeeping.media_probes_resend(timezone.now()) == 1
    assert sent == [("publishing.media_probe", lost["id"])]
    assert probed(owner_client, lost["id"])["status"] == "ready"  # what a worker then does
    assert ok(owner_client.get(f"{API}/media/{fresh['id']}"), 200)["status"] == "processing"
