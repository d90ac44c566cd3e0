"""Where media lives, for ``settings.STORAGES["default"]``: an S3-compatible bucket when
``HERALD_S3_BUCKET`` is set (django-storages), otherwise the local media folder (the embedded
``make run`` default). docs/operations.md "Configuration" lists the variables; docs/media.md the behaviour."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from config.env import env_choice, env_str


def default_storage(
    bucket: str | None, endpoint_url: str | None, media_root: Path
) -> dict[str, Any]:
    if not bucket:
        return {
            "BACKEND": "django.core.files.storage.FileSystemStorage",
            "OPTIONS": {"location": str(media_root)},
        }
    from botocore.config import Config

    return {
        "BACKEND": "storages.backends.s3.S3Storage",
        "OPTIONS": {
            "bucket_name": bucket,
            "endpoint_url": endpoint_url,
            # Bounded network calls: a hung object store must not hold a worker for minutes.
            # Path-style addressing by default for S3-compatible servers (MinIO, Garage, Ceph),
            # whose host names do not resolve bucket subdomains; AWS itself uses virtual hosts.
            "client_config": Config(
                connect_timeout=5,
                read_timeout=30,
                retries={"mode": "standard", "max_attempts": 3},
                s3={
                    "addressing_style": env_choice(
                        "HERALD_S3_ADDRESSING_STYLE",
                        ("auto", "path", "virtual"),
                        "path" if endpoint_url else "auto",
                    )
                },
            ),
            "region_name": env_str("AWS_DEFAULT_REGION") or env_str("AWS_REGION"),
            "access_key": env_str("AWS_ACCESS_KEY_ID"),
            "secret_key": env_str("AWS_SECRET_ACCESS_KEY"),
            "location": env_str("HERALD_S3_PREFIX", "") or "",
            "default_acl": None,
            "querystring_auth": True,
            "file_overwrite": False,
        },
    }
