"""MP4 uploads are accepted only when FFmpeg (PyAV) parses them as a video and decodes a frame:
real videos made here with PyAV pass; the four magic bytes alone, a cut file, a file with sound
only and a picture larger than the limit are a 422 at ``body.file``, and nothing is stored."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import av
import pytest
from rest_framework.test import APIClient

from publishing.models import Media
from tests.problem_asserts import assert_invalid
from tests.publishing_support import upload
from tests.video_support import mp4_video

pytestmark = pytest.mark.django_db


def mp4_sound_only() -> bytes:
    """A real MP4 holding one AAC audio stream and no picture."""
    out = io.BytesIO()
    with av.open(out, mode="w", format="mp4") as container:
        stream = container.add_stream("aac", rate=8000)
        for index in range(4):
            frame = av.AudioFrame(format="fltp", layout="mono", samples=1024)
            frame.sample_rate = 8000
            frame.pts = index * 1024
            frame.planes[0].update(bytes(frame.planes[0].buffer_size))
            container.mux(stream.encode(frame))
        container.mux(stream.encode(None))
    return out.getvalue()


@pytest.mark.parametrize("codec", ["libx264", "mpeg4"])
def test_a_real_mp4_video_is_accepted(
    owner_client: APIClient, workspace: Any, media_storage: Path, codec: str
) -> None:
    video = mp4_video(codec=codec)
    assert video[4:8] == b"ftyp"
    record = upload(owner_client, workspace, video, name="clip.mp4")
    assert record["mime_type"] == "video/mp4"
    assert record["size_bytes"] == len(video)


def test_a_video_spooled_to_a_temporary_file_is_parsed_from_there(
    owner_client: APIClient, workspace: Any, media_storage: Path, settings: Any
) -> None:
    settings.FILE_UPLOAD_MAX_MEMORY_SIZE = 0  # every upload goes to a temporary file
    assert upload(owner_client, workspace, mp4_video(), name="clip.mp4")["mime_type"] == "video/mp4"
    junk = b"\x00\x00\x00\x18ftypisom\x00\x00\x02\x00" + b"junk" * 200
    assert_invalid(upload(owner_client, workspace, junk, name="j.mp4", status=422), "body.file")


def test_what_does_not_parse_as_a_video_is_refused(
    owner_client: APIClient, workspace: Any, media_storage: Path
) -> None:
    video = mp4_video()
    refused = {
        "magic bytes and junk": b"\x00\x00\x00\x18ftypisom\x00\x00\x02\x00" + b"junk" * 200,
        "magic bytes only": b"\x00\x00\x00\x18ftypisom",
        "cut in half": video[: len(video) // 2],
        "sound only": mp4_sound_only(),
        "picture wider than 4096 px": mp4_video(4112, 16, frames=1),
    }
    for case, payload in refused.items():
        response = upload(owner_client, workspace, payload, name="clip.mp4", status=422)
        body = assert_invalid(response, "body.file")
        assert "video" in body["errors"][0]["message"], case
    assert not Media.objects.exists()
    assert [p for p in media_storage.rglob("*") if p.is_file()] == []
