"""Real videos for the tests, written by PyAV's bundled FFmpeg: tiny, one or two seconds."""

from __future__ import annotations

import io
import random

import av

# (PyAV muxer, video codec, the type Herald sniffs)
FORMATS = {
    "mp4": ("mp4", "libx264", "video/mp4"),
    "mov": ("mov", "libx264", "video/quicktime"),
    "webm": ("webm", "libvpx-vp9", "video/webm"),
}


def make_video(
    kind: str = "mp4",
    *,
    width: int = 64,
    height: int = 36,
    seconds: float = 1,
    rate: int = 10,
    audio: bool = False,
    rotation: int = 0,
    muxer: str | None = None,
    codec: str | None = None,
    audio_codec: str | None = None,
    noise: bool = False,
) -> bytes:
    """A real video of ``seconds`` (a grey ramp), optionally with a silent audio track;
    ``muxer``, ``codec`` and ``audio_codec`` override the kind's (e.g. H.264 in Matroska).
    ``noise``: each frame random pixels instead (seeded), a file that does not compress to a
    few kilobytes (LinkedIn takes videos of 75 KB and more)."""
    muxer = muxer or FORMATS[kind][0]
    codec = codec or FORMATS[kind][1]
    out = io.BytesIO()
    with av.open(out, mode="w", format=muxer) as container:
        stream = container.add_stream(codec, rate=rate)
        stream.width, stream.height, stream.pix_fmt = width, height, "yuv420p"
        if rotation:
            stream.set_display_rotation(rotation)
        sound = None
        if audio:
            audio_codec = audio_codec or ("libopus" if kind == "webm" else "aac")
            sound = container.add_stream(audio_codec, rate=48000)
        for index in range(int(seconds * rate)):
            frame = av.VideoFrame(width, height, "yuv420p")
            pixels = random.Random(index)
            for plane in frame.planes:
                size = plane.buffer_size
                plane.update(pixels.randbytes(size) if noise else bytes([index * 20 % 256]) * size)
            container.mux(stream.encode(frame))
        container.mux(stream.encode(None))
        if sound is not None:
            samples = 960
            for index in range(int(seconds * 48000 / samples)):
                chunk = av.AudioFrame(format="fltp", layout="mono", samples=samples)
                chunk.sample_rate = 48000
                chunk.pts = index * samples
                chunk.planes[0].update(bytes(chunk.planes[0].buffer_size))
                container.mux(sound.encode(chunk))
            container.mux(sound.encode(None))
    return out.getvalue()


def mp4_video(
    width: int = 64, height: int = 48, *, codec: str = "libx264", frames: int = 10
) -> bytes:
    """A real MP4 of ``frames`` frames (a grey ramp), encoded with PyAV's bundled FFmpeg."""
    out = io.BytesIO()
    with av.open(out, mode="w", format="mp4") as container:
        stream = container.add_stream(codec, rate=10)
        stream.width, stream.height, stream.pix_fmt = width, height, "yuv420p"
        for index in range(frames):
            frame = av.VideoFrame(width, height, "yuv420p")
            for plane in frame.planes:
                plane.update(bytes([index * 20 % 256]) * plane.buffer_size)
            container.mux(stream.encode(frame))
        container.mux(stream.encode(None))
    return out.getvalue()
