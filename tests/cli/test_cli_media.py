"""``herald media upload|list|show|delete`` against a live test server: the upload goes over
the resumable protocol, resumes after an interruption, and ``--wait`` ends at ``ready``."""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from cli import uploads
from cli.client import HeraldClient
from publishing.models import Media, Upload
from tests.cli_support import (
    Cli,
    forget_remembered_secrets,  # noqa: F401 (autouse fixture)
    json_of,
)
from tests.video_support import mp4_video
from workspaces.models import User

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def base(
    live_server: Any,
    make_token: Callable[..., str],
    user: User,
    workspace: Any,
    media_storage: Any,
    settings: Any,
    tmp_path: Path,
) -> list[str]:
    settings.MEDIA_ROOT = tmp_path / "spool"
    return ["--instance", str(live_server.url), "--token", make_token(user)]


def png_file(folder: Path) -> Path:
    path = folder / "red.png"
    out = io.BytesIO()
    Image.new("RGB", (120, 80), (200, 30, 30)).save(out, "PNG")
    path.write_bytes(out.getvalue())
    return path


def test_upload_show_list_delete(cli: Cli, base: list[str], tmp_path: Path) -> None:
    path = png_file(tmp_path)
    result = cli("media", "upload", str(path), "--alt", "A red square", "--wait", "--json", *base)
    assert result.exit_code == 0, result.output
    item = json_of(result)
    assert (item["mime_type"], item["width"], item["alt_text"]) == (
        "image/png",
        120,
        "A red square",
    )
    stored = Media.objects.get(pk=item["id"])
    assert stored.file.read() == path.read_bytes()
    shown = cli("media", "show", item["id"], *base)
    assert "A red square" in shown.stdout
    assert "ready" in shown.stdout
    listed = cli("media", "list", *base)
    assert item["id"] in listed.stdout
    assert cli("media", "delete", item["id"], *base).exit_code == 0
    assert not Media.objects.exists()


def test_progress_bar_on_stderr(cli: Cli, base: list[str], tmp_path: Path) -> None:
    result = cli("media", "upload", str(png_file(tmp_path)), *base)
    assert result.exit_code == 0, result.output
    assert "MB/s" in result.stderr
    assert "100%" in result.stderr
    assert "image/png" in result.stdout


def test_an_interrupted_upload_resumes_when_run_again(
    cli: Cli,
    base: list[str],
    tmp_path: Path,
    config_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
    workspace: Any,
) -> None:
    path = tmp_path / "clip.mp4"
    path.write_bytes(mp4_video())
    chunk = path.stat().st_size // 5
    monkeypatch.setattr(uploads, "CHUNK_BYTES", chunk)
    client = HeraldClient(base[1], base[3])
    workspace_id = str(workspace.pk)
    calls = []

    def interrupt(done: int, total: int) -> None:
        calls.append(done)
        if len(calls) == 3:  # after two PATCHes: Ctrl-C
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        uploads.upload_file(client, workspace_id, path, progress=interrupt)
    assert Upload.objects.get().offset == 2 * chunk
    remembered = json.loads((config_dir / "uploads.json").read_text())
    assert len(remembered) == 1

    result = cli("media", "upload", str(path), "--json", *base)
    assert result.exit_code == 0, result.output
    item = json_of(result)
    assert Media.objects.get(pk=item["id"]).file.read() == path.read_bytes()
    assert Upload.objects.get().media_id is not None  # the same upload, finished
    assert json.loads((config_dir / "uploads.json").read_text()) == {}


def test_a_refused_file_exits_rejected(cli: Cli, base: list[str], tmp_path: Path) -> None:
    path = tmp_path / "fake.mp4"
    path.write_bytes(b"\x00\x00\x00\x18ftypmp42" + b"\x01" * 3000)
    result = cli("media", "upload", str(path), *base)
    assert result.exit_code == 4, result.output
    assert not Media.objects.exists()
    assert not Upload.objects.exists()


def test_the_token_never_follows_an_upload_url_to_another_host(cli: Cli, tmp_path: Path) -> None:
    from tests.cli_support import LeakyInstance

    with LeakyInstance({}) as thief:
        routes = {
            "POST /api/v1/uploads": (201, {"Location": f"{thief.url}/api/v1/uploads/x"}, b""),
        }
        with LeakyInstance(routes) as instance:
            result = cli(
                "media",
                "upload",
                str(png_file(tmp_path)),
                "--instance",
                instance.url,
                "--token",
                "hrld_abcdef12_" + "x" * 43,
                "--workspace",
                "00000000-0000-4000-8000-000000000000",
            )
    assert result.exit_code != 0
    assert "elsewhere" in result.output
    assert thief.seen == []


def test_a_chunk_damaged_on_the_way_is_discarded_and_sent_again(
    base: list[str],
    tmp_path: Path,
    config_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
    workspace: Any,
) -> None:
    """Every PATCH carries its SHA-256: the instance refuses the damaged bytes (460, nothing
    kept) and the client sends the same chunk again."""
    path = tmp_path / "clip.mp4"
    path.write_bytes(mp4_video())
    chunk = -(-path.stat().st_size // 3)  # three PATCHes
    monkeypatch.setattr(uploads, "CHUNK_BYTES", chunk)
    client = HeraldClient(base[1], base[3])
    sent = client.tus
    answers: list[tuple[int, str]] = []

    def damage_the_second_chunk_once(method: str, **kwargs: Any) -> Any:
        if method != "PATCH":
            return sent(method, **kwargs)
        data = kwargs["data"]
        if kwargs["headers"]["Upload-Offset"] == str(chunk) and len(answers) == 1:
            kwargs = {**kwargs, "data": data[:-1] + bytes([data[-1] ^ 0xFF])}
        response = sent(method, **kwargs)
        answers.append((response.status_code, kwargs["headers"]["Upload-Checksum"][:7]))
        return response

    monkeypatch.setattr(client, "tus", damage_the_second_chunk_once)
    media_id = uploads.upload_file(client, str(workspace.pk), path)
    assert [status for status, _ in answers] == [204, 460, 204, 204]
    assert {algorithm for _, algorithm in answers} == {"sha256 "}
    assert Media.objects.get(pk=media_id).file.read() == path.read_bytes()
