"""Bounded conversion of an uploaded video to the format every network Herald posts video to
takes: MP4 with H.264 video and AAC sound (or none). Run by the probe worker, through PyAV.

- Right codecs in another container (H.264/AAC in MOV, MKV or WebM): the packets are copied
  into an MP4 (a re-mux, no decoding; seconds even for a large file).
- H.264 with other sound (Opus, Vorbis, MP3): the video is copied, the sound re-encoded to AAC.
- Another video codec (VP8, VP9, AV1, HEVC, MPEG-4 part 2): re-encoded to H.264 (and AAC).

Every conversion stops at ``HERALD_TRANSCODE_MAX_SECONDS`` of wall-clock time or when its
output passes ``HERALD_TRANSCODE_MAX_BYTES``; the video then stays as it was uploaded, with its
probe, and the network's video rules say what to change before posting it.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from django.conf import settings

from publishing.services.video import DEMUXERS, VideoProbe, VideoRefused, probe_video

if TYPE_CHECKING:
    from av.container import InputContainer, OutputContainer
    from av.stream import Stream

logger = logging.getLogger(__name__)

TARGET_CONTAINER = "mp4"
TARGET_VIDEO = "h264"
TARGET_AUDIO = "aac"
X264_OPTIONS = {"preset": "veryfast", "crf": "23"}  # speed first: a conversion is bounded
CHECK_EVERY = 50  # packets between two checks of the bounds (a stat of the output)


class ConversionStopped(Exception):
    """A conversion passed its bound (time or size); the message says which, for a person."""


@dataclass(frozen=True)
class Plan:
    """What a video needs re-encoded; the rest is copied as it is."""

    encode_video: bool
    encode_audio: bool

    @property
    def kind(self) -> str:
        return "transcode" if self.encode_video else "remux"


def conversion_plan(facts: dict[str, Any]) -> Plan | None:
    """``None`` when the video is already MP4/H.264 with AAC or no sound."""
    encode_video = facts.get("video_codec") != TARGET_VIDEO
    audio = facts.get("audio_codec")
    encode_audio = audio is not None and audio != TARGET_AUDIO
    if not encode_video and not encode_audio and facts.get("container") == TARGET_CONTAINER:
        return None
    return Plan(encode_video=encode_video, encode_audio=encode_audio)


def convert_to_mp4(
    source: IO[bytes], mime_type: str, facts: dict[str, Any], plan: Plan, target: Path
) -> None:
    """Write the converted video to ``target``; :class:`ConversionStopped` past a bound (the
    partial file is the caller's to delete)."""
    import av

    deadline = time.monotonic() + settings.HERALD_TRANSCODE_MAX_SECONDS
    source.seek(0)
    with (
        av.open(source, mode="r", format=DEMUXERS[mime_type]) as inp,
        av.open(str(target), mode="w", format="mp4", options={"movflags": "+faststart"}) as out,
    ):
        handlers = _handlers(inp, out, plan, facts)
        for count, packet in enumerate(inp.demux(*handlers)):
            if count % CHECK_EVERY == 0:
                _check_bounds(deadline, target)
            handlers[packet.stream](packet)
        for handler in handlers.values():
            handler(None)  # flush the encoders
    _check_bounds(deadline, target)


def _check_bounds(deadline: float, target: Path) -> None:
    limit = settings.HERALD_TRANSCODE_MAX_SECONDS
    if time.monotonic() > deadline:
        raise ConversionStopped(f"Converting it to MP4 (H.264/AAC) took longer than {limit} s.")
    size_limit = settings.HERALD_TRANSCODE_MAX_BYTES
    if target.exists() and target.stat().st_size > size_limit:
        raise ConversionStopped(
            f"Converting it to MP4 (H.264/AAC) made a file larger than {size_limit} bytes."
        )


Handler = Callable[[Any], None]  # takes a packet, or None to flush


def _handlers(
    inp: InputContainer, out: OutputContainer, plan: Plan, facts: dict[str, Any]
) -> dict[Stream, Handler]:
    """One handler per input stream kept (the first video and audio streams)."""
    video = inp.streams.video[0]
    video.thread_type = "AUTO"
    handlers: dict[Stream, Handler] = {
        video: _encode_video(video, out, facts) if plan.encode_video else _copy(video, out)
    }
    if inp.streams.audio:
        audio = inp.streams.audio[0]
        handlers[audio] = _encode_audio(audio, out) if plan.encode_audio else _copy(audio, out)
    return handlers


def _copy(stream: Stream, out: OutputContainer) -> Handler:
    copied = out.add_stream_from_template(stream)

    def handle(packet: Any) -> None:
        if packet is None or packet.size == 0:  # the demuxer's empty flush packet
            return  # (a missing dts, as Matroska leaves before B-frames, the MP4 muxer derives)
        packet.stream = copied
        out.mux(packet)

    return handle


def _encode_video(stream: Any, out: OutputContainer, facts: dict[str, Any]) -> Handler:
    """H.264 in 4:2:0 at the same size (even sides, as 4:2:0 needs) and frame rate."""
    width, height = stream.codec_context.width & ~1, stream.codec_context.height & ~1
    encoded: Any = out.add_stream("libx264", rate=stream.average_rate or stream.guessed_rate or 30)
    encoded.width, encoded.height, encoded.pix_fmt = width, height, "yuv420p"
    encoded.options = dict(X264_OPTIONS)
    if facts.get("rotation"):
        encoded.set_display_rotation(facts["rotation"])

    def handle(packet: Any) -> None:
        frames = packet.decode() if packet is not None else [None]
        for frame in frames:
            if frame is not None:
                frame = frame.reformat(width=width, height=height, format="yuv420p")
            out.mux(encoded.encode(frame))

    return handle


def _encode_audio(stream: Any, out: OutputContainer) -> Handler:
    """AAC at the same sample rate and channel layout."""
    import av

    rate = stream.codec_context.sample_rate or 48000
    layout = stream.codec_context.layout.name if stream.codec_context.layout else "stereo"
    encoded: Any = out.add_stream("aac", rate=rate)
    encoded.layout = layout
    resampler = av.AudioResampler(format="fltp", layout=layout, rate=rate)

    def handle(packet: Any) -> None:
        frames: list[Any] = packet.decode() if packet is not None else [None]
        for frame in frames:
            for ready in resampler.resample(frame):
                out.mux(encoded.encode(ready))
        if packet is None:
            out.mux(encoded.encode(None))

    return handle


def convert_probed(
    source: IO[bytes], mime_type: str, probe: VideoProbe, folder: Path
) -> tuple[VideoProbe, Path | None]:
    """The probe to record and the converted MP4 in ``folder`` (``None``: keep the upload as it
    is, because it needs nothing or because the conversion stopped or failed, noted in the
    facts as ``conversion_stopped``)."""
    import av

    plan = conversion_plan(probe.facts)
    if plan is None:
        return probe, None
    target = folder / "converted.mp4"
    try:
        convert_to_mp4(source, mime_type, probe.facts, plan, target)
        with target.open("rb") as handle:
            after = probe_video(handle, "video/mp4")
    except ConversionStopped as exc:
        return _stopped(probe, plan, str(exc)), None
    except (VideoRefused, av.FFmpegError, ValueError, OSError, EOFError, MemoryError):
        logger.warning("converting a %s video to MP4 failed", mime_type, exc_info=True)
        return _stopped(probe, plan, "Herald could not convert it to MP4 (H.264/AAC)."), None
    origin = {key: probe.facts.get(key) for key in ("container", "video_codec", "audio_codec")}
    facts = {**after.facts, "conversion": plan.kind, "converted_from": origin}
    return VideoProbe(facts=facts, poster_jpeg=after.poster_jpeg), target


def _stopped(probe: VideoProbe, plan: Plan, reason: str) -> VideoProbe:
    facts = {**probe.facts, "conversion_stopped": reason[:300]}
    return VideoProbe(facts=facts, poster_jpeg=probe.poster_jpeg)
