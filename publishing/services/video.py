"""MP4 uploads parsed by FFmpeg (through PyAV) before they are stored: four magic bytes make no
video.

Only FFmpeg's MP4 demuxer is used (never its format guessing), the picture size is checked
against :data:`MAX_SIDE` from the container before anything is decoded, and then a single
thread decodes frames from at most :data:`MAX_PACKETS` packets until one comes out: the work
and the memory are bounded whatever the file claims.
"""

from __future__ import annotations

from typing import IO, TYPE_CHECKING

if TYPE_CHECKING:
    from av.container import InputContainer
    from av.video.stream import VideoStream

MAX_SIDE = 4096  # pixels per side: DCI 4K; one decoded frame is then at most about 25 MB
MAX_PACKETS = 300  # packets read while waiting for the first frame (the decoder's delay)


class VideoRefused(ValueError):
    """The file is not an MP4 video Herald accepts; the message says why, for a person."""


def check_mp4_video(file: IO[bytes]) -> tuple[int, int]:
    """The width and height of the MP4 video in ``file``, once its first frame decodes; raise
    :class:`VideoRefused` otherwise."""
    import av  # FFmpeg's libraries are loaded only by the processes that take uploads

    try:
        with av.open(file, mode="r", format="mp4") as container:
            if not container.streams.video:
                raise VideoRefused("The file has no video stream.")
            stream = container.streams.video[0]
            width, height = stream.codec_context.width, stream.codec_context.height
            if not (0 < width <= MAX_SIDE and 0 < height <= MAX_SIDE):
                raise VideoRefused(
                    f"The video is {width} x {height} px; at most {MAX_SIDE} px per side."
                )
            stream.thread_type = "NONE"  # one frame in flight, not one per decoding thread
            if not _first_frame(container, stream):
                raise VideoRefused("The video's first frame cannot be decoded.")
    except VideoRefused:
        raise
    except (av.FFmpegError, ValueError, OSError, EOFError) as exc:
        raise VideoRefused("The file is damaged or not an MP4 video.") from exc
    return width, height


def _first_frame(container: InputContainer, stream: VideoStream) -> bool:
    """Whether a frame comes out of the first :data:`MAX_PACKETS` packets (the demuxer's last,
    empty packet flushes the decoder's delayed frames)."""
    for count, packet in enumerate(container.demux(stream)):
        if count >= MAX_PACKETS:
            return False
        if packet.decode():
            return True
    return False
