"""Video uploads parsed by FFmpeg (through PyAV): four magic bytes make no video.

Only the demuxer named by the file's signature is used (never FFmpeg's format guessing): the
ISO/QuickTime one for MP4 and MOV, the Matroska one for WebM. The picture size is checked
against :data:`MAX_SIDE` from the container before anything is decoded, and a single thread
decodes frames from at most :data:`MAX_PACKETS` packets until one comes out; probing also stops
after :data:`MAX_SECONDS` of wall-clock time: the work and the memory are bounded whatever the
file claims.
"""

from __future__ import annotations

import io
import time
from dataclasses import dataclass
from fractions import Fraction
from typing import IO, TYPE_CHECKING, Any

if TYPE_CHECKING:
    from av.container import InputContainer
    from av.video.frame import VideoFrame
    from av.video.stream import VideoStream

MAX_SIDE = 4096  # pixels per side: DCI 4K; one decoded frame is then at most about 25 MB
MAX_PACKETS = 300  # packets read while waiting for the first frame (the decoder's delay)
MAX_SECONDS = 20.0  # wall-clock budget of one probe (the task's own limit is above it)
POSTER_SIDE = 1280  # the poster JPEG is scaled down to at most this many pixels per side

# FFmpeg demuxer per sniffed type: the file is parsed by that demuxer only.
DEMUXERS = {"video/mp4": "mp4", "video/quicktime": "mov", "video/webm": "webm"}


class VideoRefused(ValueError):
    """The file is not a video Herald accepts; the message says why, for a person."""


@dataclass(frozen=True)
class VideoProbe:
    """What the worker learns of a video: stored as the media item's ``probe`` and its poster."""

    facts: dict[str, Any]
    poster_jpeg: bytes


def check_mp4_video(file: IO[bytes], mime_type: str = "video/mp4") -> tuple[int, int]:
    """The width and height of the video in ``file``, once its first frame decodes; raise
    :class:`VideoRefused` otherwise."""
    probe = probe_video(file, mime_type, poster=False)
    return probe.facts["width"], probe.facts["height"]


def probe_video(file: IO[bytes], mime_type: str, *, poster: bool = True) -> VideoProbe:
    """Container, codecs, duration, size, rotation, frame rate, bit rate and audio presence of
    the video in ``file``, and its first frame as a JPEG; :class:`VideoRefused` otherwise."""
    import av  # FFmpeg's libraries are loaded only by the processes that take uploads

    demuxer = DEMUXERS.get(mime_type)
    if demuxer is None:
        raise VideoRefused(f"{mime_type} is not a video type Herald accepts.")
    deadline = time.monotonic() + MAX_SECONDS
    file_size = file.seek(0, 2)
    file.seek(0)
    try:
        with av.open(file, mode="r", format=demuxer) as container:
            if not container.streams.video:
                raise VideoRefused("The file has no video stream.")
            stream = container.streams.video[0]
            width, height = stream.codec_context.width, stream.codec_context.height
            if not (0 < width <= MAX_SIDE and 0 < height <= MAX_SIDE):
                raise VideoRefused(
                    f"The video is {width} x {height} px; at most {MAX_SIDE} px per side."
                )
            facts = _facts(container, stream, mime_type)
            stream.thread_type = "NONE"  # one frame in flight, not one per decoding thread
            frame = _first_frame(container, stream, deadline)
            if frame is None:
                raise VideoRefused("The video's first frame cannot be decoded.")
            facts["rotation"] = round(getattr(frame, "rotation", 0) or 0) % 360
            jpeg = b""
            if poster:
                jpeg = _poster(frame)
                _check_complete(container, stream, facts, deadline, file_size)
    except VideoRefused:
        raise
    except (av.FFmpegError, ValueError, OSError, EOFError, MemoryError) as exc:
        raise VideoRefused("The file is damaged or not a video Herald can read.") from exc
    return VideoProbe(facts=facts, poster_jpeg=jpeg)


def _facts(container: InputContainer, stream: VideoStream, mime_type: str) -> dict[str, Any]:
    import av

    duration = None
    if container.duration is not None and container.duration > 0:
        duration = round(container.duration / av.time_base, 3)
    elif stream.duration and stream.time_base:
        duration = round(float(stream.duration * stream.time_base), 3)
    rate = stream.average_rate or stream.guessed_rate
    audio = container.streams.audio[0] if container.streams.audio else None
    return {
        "container": {"video/mp4": "mp4", "video/quicktime": "mov", "video/webm": "webm"}[
            mime_type
        ],
        "video_codec": stream.codec_context.name,
        "audio_codec": audio.codec_context.name if audio is not None else None,
        "has_audio": audio is not None,
        "duration_seconds": duration,
        "width": stream.codec_context.width,
        "height": stream.codec_context.height,
        "rotation": 0,  # read from the first decoded frame (the display matrix)
        "frame_rate": round(float(Fraction(rate)), 3) if rate else None,
        "bit_rate": container.bit_rate or None,
    }


def _first_frame(
    container: InputContainer, stream: VideoStream, deadline: float
) -> VideoFrame | None:
    """The first frame out of the first :data:`MAX_PACKETS` packets (the demuxer's last, empty
    packet flushes the decoder's delayed frames), within the wall-clock budget."""
    for count, packet in enumerate(container.demux(stream)):
        if count >= MAX_PACKETS:
            return None
        if time.monotonic() > deadline:
            raise VideoRefused(f"Probing the video took longer than {MAX_SECONDS:.0f} s.")
        frames = packet.decode()
        if frames:
            return frames[0]
    return None


def _check_complete(
    container: InputContainer,
    stream: VideoStream,
    facts: dict[str, Any],
    deadline: float,
    file_size: int,
) -> None:
    """Every packet the container announces is in the file, whole (a truncated upload is
    refused): packets are read, not decoded, until the end, within the wall-clock budget."""
    container.seek(0)
    count, last_end, bytes_end = 0, 0.0, 0
    for packet in container.demux(stream):
        if time.monotonic() > deadline:
            raise VideoRefused(f"Probing the video took longer than {MAX_SECONDS:.0f} s.")
        if packet.size == 0:
            continue
        count += 1
        if packet.pos is not None and packet.pos >= 0:
            bytes_end = max(bytes_end, packet.pos + packet.size)
        if packet.pts is not None and packet.time_base is not None:
            end = float((packet.pts + (packet.duration or 0)) * packet.time_base)
            last_end = max(last_end, end)
    for any_stream in container.streams:  # the container's own index (MP4/MOV sample table)
        entries = any_stream.index_entries
        for position in range(len(entries)):
            entry = entries[position]
            if entry.pos >= 0:
                bytes_end = max(bytes_end, entry.pos + entry.size)
    if bytes_end > file_size:
        raise VideoRefused(f"The video is truncated: {file_size} of {bytes_end} bytes.")
    expected = stream.frames
    duration = facts.get("duration_seconds")
    if count == 0 or (expected and count < expected):
        raise VideoRefused(f"The video is truncated: {count} of {expected or '?'} frames.")
    slack = 1.5 / facts["frame_rate"] if facts.get("frame_rate") else 0.5  # about one frame
    if duration and last_end < duration - slack:
        raise VideoRefused(f"The video is truncated: it stops at {last_end:.1f} s of {duration} s.")


def _poster(frame: VideoFrame) -> bytes:
    image = frame.to_image()  # type: ignore[no-untyped-call]
    rotation = round(getattr(frame, "rotation", 0) or 0) % 360
    if rotation:
        image = image.rotate(rotation, expand=True)  # counter-clockwise, as the player turns it
    image.thumbnail((POSTER_SIDE, POSTER_SIDE))
    out = io.BytesIO()
    image.convert("RGB").save(out, format="JPEG", quality=85)
    return out.getvalue()
