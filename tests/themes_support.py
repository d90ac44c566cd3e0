"""Helpers of the theme tests (no tests here): real fonts and images made in memory, the API
calls every theme test needs, and the teardown that lets transactional tests run on SQLite."""

from __future__ import annotations

import copy
import importlib
import io
import os
import struct
import zlib
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection
from fontTools.fontBuilder import FontBuilder
from fontTools.pens.ttGlyphPen import TTGlyphPen
from PIL import Image

from themes.builtins import built_in_manifest
from themes.models import PublishedRevision, ThemeAsset


def woff2_font(
    *,
    family: str = "Herald Test Sans",
    weight: int = 400,
    italic: bool = False,
    variable: bool = False,
    glyphs: int = 1,
    points: int = 3,
) -> bytes:
    """A real (tiny) WOFF2 font with ``glyphs`` glyphs of ``points`` points each (one
    triangle by default), built with fontTools."""
    builder = FontBuilder(1000, isTTF=True)
    names = ["A", *(f"g{index}" for index in range(1, glyphs))]
    builder.setupGlyphOrder([".notdef", *names])
    builder.setupCharacterMap({0x41: "A"})
    outlines = {".notdef": TTGlyphPen(None).glyph()}
    for index, name in enumerate(names):
        pen = TTGlyphPen(None)
        pen.moveTo((0, 0))
        if points == 3:
            pen.lineTo((500, 0))
            pen.lineTo((250, 700))
        else:
            for step in range(1, points):
                pen.lineTo(((step * 7 + index) % 1000, (step * 13) % 1000))
        pen.closePath()
        outlines[name] = pen.glyph()
    builder.setupGlyf(outlines)
    builder.setupHorizontalMetrics(dict.fromkeys(outlines, (500, 0)))
    builder.setupHorizontalHeader(ascent=800, descent=-200)
    builder.setupNameTable({"familyName": family, "styleName": "Italic" if italic else "Regular"})
    builder.setupOS2(usWeightClass=weight, fsSelection=0x01 if italic else 0x40)
    builder.setupPost()
    builder.font["head"].macStyle = 0b10 if italic else 0
    if variable:
        builder.setupFvar(axes=[("wght", 100, 400, 900, "Weight")], instances=[])
    builder.font.flavor = "woff2"
    out = io.BytesIO()
    builder.save(out)
    return out.getvalue()


def image_bytes(
    width: int = 64, height: int = 48, image_format: str = "PNG", *, noise: bool = False
) -> bytes:
    if noise:
        image = Image.frombytes("RGB", (width, height), os.urandom(width * height * 3))
    else:
        image = Image.new("RGB", (width, height), (200, 120, 40))
    out = io.BytesIO()
    image.save(out, image_format)
    return out.getvalue()


def png_header_only(width: int, height: int) -> bytes:
    """A PNG whose header claims ``width`` x ``height`` pixels (no image data follows)."""

    def chunk(kind: bytes, payload: bytes) -> bytes:
        return (
            struct.pack(">I", len(payload))
            + kind
            + payload
            + struct.pack(">I", zlib.crc32(kind + payload))
        )

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IEND", b"")


def upload(
    data: bytes, name: str = "file.bin", content_type: str = "application/octet-stream"
) -> SimpleUploadedFile:
    return SimpleUploadedFile(name, data, content_type=content_type)


def manifest(built_in_id: str = "neutral", **changes: Any) -> dict[str, Any]:
    """A deep copy of a built-in's manifest with top-level ``changes``."""
    data = copy.deepcopy(built_in_manifest(built_in_id))
    data.update(changes)
    return data


def create_theme(client: Any, organization: Any, name: str = "Brand") -> dict[str, Any]:
    response = client.post(
        "/api/v1/themes", {"name": name, "organization_id": str(organization.pk)}, format="json"
    )
    assert response.status_code == 201, response.content[:500]
    return response.json()  # type: ignore[no-any-return]


def replace_draft(
    client: Any,
    organization: Any,
    theme: dict[str, Any],
    body_manifest: dict[str, Any],
    *,
    expected_revision: int | None = None,
    name: str | None = None,
) -> Any:
    return client.put(
        f"/api/v1/themes/{theme['draft']['theme_id']}/draft",
        {
            "organization_id": str(organization.pk),
            "expected_revision": expected_revision or theme["draft"]["revision"],
            "name": name or theme["summary"]["name"],
            "manifest": body_manifest,
        },
        format="json",
    )


def publish(
    client: Any, organization: Any, theme_id: str, *, draft: int, published: int | None
) -> Any:
    return client.post(
        f"/api/v1/themes/{theme_id}/publish",
        {
            "organization_id": str(organization.pk),
            "expected_draft_revision": draft,
            "expected_published_revision": published,
        },
        format="json",
    )


def upload_asset(
    client: Any, organization: Any, data: bytes, *, kind: str = "image", **fields: Any
) -> Any:
    body = {
        "organization_id": str(organization.pk),
        "kind": kind,
        "name": fields.pop("name", "Asset"),
        "file": upload(data, fields.pop("filename", "upload.bin")),
        **fields,
    }
    return client.post("/api/v1/theme-assets", body, format="multipart")


def make_assets(
    organization: Any, user: Any, count: int, *, start: Any, step: timedelta
) -> list[str]:
    """Asset rows (the listing reads rows only). In each group of five, two neighbours share a
    timestamp, so the ID must break ties."""
    rows = []
    for number in range(count):
        created_at = start + step * (number - number % 5 // 3)
        rows.append(
            ThemeAsset(
                organization=organization,
                name=f"asset {number}",
                kind="image",
                media_type="image/png",
                size_bytes=10,
                checksum_sha256="0" * 64,
                file=f"theme-assets/{organization.pk}/{number}.png",
                width=1,
                height=1,
                created_at=created_at,
                created_by=str(user.pk),
            )
        )
    ThemeAsset.objects.bulk_create(rows)
    return [str(row.pk) for row in rows]


@pytest.fixture
def flushable_revisions(transactional_db: None) -> Iterator[None]:
    """Transactional tests end with Django emptying every table. PostgreSQL does that with
    ``TRUNCATE`` (row triggers do not fire); SQLite with ``DELETE``, which the immutability
    triggers refuse once a revision was published. So, on SQLite only and in the test database
    only, this teardown (which runs before Django's flush) drops the two triggers, empties the
    revisions table and installs the triggers again, with the migration's own statements.

    Nothing in the application can switch the triggers off: this is DDL in the test's teardown,
    and whoever can run DDL can drop a trigger anyway. The guarantee stays "no UPDATE or DELETE".
    """
    yield
    if connection.vendor != "sqlite":
        return
    migration = importlib.import_module("themes.migrations.0002_published_revision_immutable")
    with connection.cursor() as cursor:
        for statement in migration.SQLITE_REVERSE:
            cursor.execute(statement)
        cursor.execute(f"DELETE FROM {PublishedRevision._meta.db_table}")  # noqa: S608
        for statement in migration.SQLITE:
            cursor.execute(statement)
        assert sqlite_revision_triggers(cursor) == SQLITE_TRIGGERS  # the guard is back


SQLITE_TRIGGERS = ["themes_publishedrevision_no_delete", "themes_publishedrevision_no_update"]


def sqlite_revision_triggers(cursor: Any) -> list[str]:
    cursor.execute(
        "SELECT name FROM sqlite_master WHERE type = 'trigger' AND tbl_name = %s ORDER BY name",
        [PublishedRevision._meta.db_table],
    )
    return [row[0] for row in cursor.fetchall()]
