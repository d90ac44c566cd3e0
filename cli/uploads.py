"""A small tus 1.0 client for ``herald media upload``, over the CLI's own ``requests`` session.

Why not ``tuspy``: it is the maintained tus client, but it brings aiohttp, tinydb and their
dependencies into a CLI that otherwise needs only ``requests``, click and platformdirs; the part
of tus a single-file upload uses (create, HEAD, PATCH) is a few dozen lines.

Resumption: the upload URL is remembered in ``uploads.json`` of the CLI's configuration folder,
under the file's absolute path, size and modification time (and the instance and workspace), so
running the same command again after an interruption HEADs the upload and sends only the rest.
A changed file (other size or mtime) starts a new upload.

Integrity: every PATCH carries ``Upload-Checksum: sha256 …`` (tus's checksum extension); the
instance discards bytes that arrive damaged (460) and the client sends that chunk again, up to
:data:`CHECKSUM_RETRIES` times.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import requests

from cli.client import HeraldClient, UnexpectedResponse
from cli.config import config_dir

CHUNK_BYTES = 8 * 1024 * 1024  # one PATCH: short requests, little lost on an interruption
STATE_FILE = "uploads.json"
CHECKSUM_RETRIES = 3  # a chunk damaged this many times in a row is not a passing fault


def _metadata(values: dict[str, str]) -> str:
    return ",".join(
        f"{key} {base64.b64encode(value.encode()).decode()}"
        for key, value in values.items()
        if value
    )


class UploadState:
    """Upload URLs of unfinished uploads, by file identity (mode 0600: URLs are not secret,
    but they name the instance and the workspace)."""

    def __init__(self, directory: Path | None = None) -> None:
        self.path = (directory or config_dir()) / STATE_FILE

    def _read(self) -> dict[str, str]:
        try:
            data = json.loads(self.path.read_text())
        except (OSError, ValueError):
            return {}
        return {str(k): str(v) for k, v in data.items()} if isinstance(data, dict) else {}

    def _write(self, data: dict[str, str]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        temporary = self.path.with_suffix(".tmp")
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as handle:
            json.dump(data, handle, indent=1)
        os.replace(temporary, self.path)

    def get(self, key: str) -> str | None:
        return self._read().get(key)

    def put(self, key: str, url: str) -> None:
        self._write({**self._read(), key: url})

    def forget(self, key: str) -> None:
        data = self._read()
        if data.pop(key, None) is not None:
            self._write(data)


def file_key(client: HeraldClient, workspace_id: str, path: Path) -> str:
    stat = path.stat()
    return f"{client.instance}|{workspace_id}|{path.resolve()}|{stat.st_size}|{stat.st_mtime_ns}"


def upload_file(
    client: HeraldClient,
    workspace_id: str,
    path: Path,
    *,
    alt_text: str = "",
    progress: Callable[[int, int], Any] = lambda done, total: None,
    state: UploadState | None = None,
) -> str:
    """Upload ``path`` (resuming a remembered upload of the same file); the media item's ID.

    ``progress(done, total)`` is called with the offset after each PATCH (and once at the
    start, with the offset a resumed upload starts from)."""
    state = state or UploadState()
    key = file_key(client, workspace_id, path)
    size = path.stat().st_size
    url, offset = _resume(client, state, key)
    if url is None:
        url = _create(client, workspace_id, path, size, alt_text)
        state.put(key, url)
        offset = 0
    progress(offset, size)
    with path.open("rb") as handle:
        while True:
            handle.seek(offset)
            chunk = handle.read(CHUNK_BYTES)
            response = _patch(client, url, offset, chunk)
            if response.status_code in (404, 410):
                state.forget(key)
                raise UnexpectedResponse("The upload expired on the instance; run again.")
            if response.status_code == 409:  # out of step: ask where the upload is
                offset = _offset(client, url)
                continue
            offset = int(response.headers.get("Upload-Offset", offset + len(chunk)))
            progress(offset, size)
            media_id = response.headers.get("Herald-Media-Id")
            if media_id:
                state.forget(key)
                return media_id
            if offset >= size:
                raise UnexpectedResponse("The instance took every byte but named no media item.")


def _patch(client: HeraldClient, url: str, offset: int, chunk: bytes) -> requests.Response:
    """PATCH ``chunk`` at ``offset`` with its SHA-256; a chunk the instance received damaged
    (460: discarded, the offset unchanged) is sent again."""
    digest = base64.b64encode(hashlib.sha256(chunk).digest()).decode()
    for _ in range(CHECKSUM_RETRIES):
        response = client.tus(
            "PATCH",
            url=url,
            headers={
                "Upload-Offset": str(offset),
                "Upload-Checksum": f"sha256 {digest}",
                "Content-Type": "application/offset+octet-stream",
            },
            data=chunk,
            passthrough=(404, 409, 410, 460),
        )
        if response.status_code != 460:
            return response
    raise UnexpectedResponse(
        f"The bytes at offset {offset} arrived damaged {CHECKSUM_RETRIES} times; run again."
    )


def _resume(client: HeraldClient, state: UploadState, key: str) -> tuple[str | None, int]:
    url = state.get(key)
    if url is None:
        return None, 0
    response = client.tus("HEAD", url=url, headers={})
    if response.status_code in (404, 410):
        state.forget(key)
        return None, 0
    return url, int(response.headers.get("Upload-Offset", "0"))


def _offset(client: HeraldClient, url: str) -> int:
    response = client.tus("HEAD", url=url, headers={})
    if response.status_code >= 400:
        raise UnexpectedResponse("The upload is gone from the instance; run again.")
    return int(response.headers.get("Upload-Offset", "0"))


def _create(client: HeraldClient, workspace_id: str, path: Path, size: int, alt: str) -> str:
    response = client.tus(
        "POST",
        passthrough=(),
        headers={
            "Upload-Length": str(size),
            "Upload-Metadata": _metadata(
                {
                    "workspace_id": workspace_id,
                    "filename": path.name,
                    "filetype": "application/octet-stream",
                    "alt_text": alt,
                }
            ),
        },
    )
    location = response.headers.get("Location")
    if response.status_code != 201 or not location:
        raise UnexpectedResponse(f"{client.instance} did not create the upload.")
    return location
