"""Public provider-format claims and the ``provider-certification`` release gate.

``readiness/claims/public-claims.json`` is the only source of public claims; the release
manifest binds its ``sha256:`` digest, schema version and claim count. A build, an adapter, a
configured credential, a mocked test or a manual checklist cannot add a claim: a claim is
advertised only when it is in this file, the manifest binds the file, and the claim's contract
digest is the current one of its subject.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

CLAIMS_DIR = Path(__file__).resolve().parent / "claims"
CLAIMS_FILE = CLAIMS_DIR / "public-claims.json"
MANIFEST_FILE = CLAIMS_DIR / "release-manifest.json"
SCHEMA_VERSION = 1
CLAIM_FIELDS = ("provider", "output_profile", "operation", "contract_digest")


class ClaimsError(Exception):
    """The claims file or its manifest is malformed or unbound: nothing may be claimed."""


@dataclass(frozen=True)
class Claim:
    provider: str
    output_profile: str
    operation: str
    contract_digest: str

    def key(self) -> tuple[str, str, str, str]:
        return (self.provider, self.output_profile, self.operation, self.contract_digest)


def file_digest(path: Path) -> str:
    return "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest()


def parse_claims(raw: bytes) -> tuple[int, list[Claim]]:
    try:
        document = json.loads(raw)
    except ValueError as exc:
        raise ClaimsError(f"the claims file is not JSON ({exc})") from None
    if not isinstance(document, dict) or set(document) != {"schema_version", "claims"}:
        raise ClaimsError('the claims file must be {"schema_version": …, "claims": […]}')
    if document["schema_version"] != SCHEMA_VERSION:
        raise ClaimsError(f"unsupported claims schema_version {document['schema_version']!r}")
    if not isinstance(document["claims"], list):
        raise ClaimsError("claims must be a list")
    claims = []
    for index, item in enumerate(document["claims"]):
        if (
            not isinstance(item, dict)
            or set(item) != set(CLAIM_FIELDS)
            or not all(isinstance(item[name], str) for name in CLAIM_FIELDS)
        ):
            raise ClaimsError(
                f"claim {index} must have exactly the string fields {', '.join(CLAIM_FIELDS)}"
            )
        claims.append(Claim(**{name: item[name] for name in CLAIM_FIELDS}))
    return SCHEMA_VERSION, claims


def verify_manifest(
    claims_path: Path = CLAIMS_FILE, manifest_path: Path = MANIFEST_FILE
) -> list[Claim]:
    """The claims, once the manifest is shown to bind exactly this file."""
    try:
        raw = claims_path.read_bytes()
        manifest = json.loads(manifest_path.read_bytes())
    except OSError as exc:
        raise ClaimsError(f"cannot read {exc.filename}") from None
    except ValueError as exc:
        raise ClaimsError(f"the release manifest is not JSON ({exc})") from None
    schema_version, claims = parse_claims(raw)
    expected = {
        "claims_file": claims_path.name,
        "sha256": "sha256:" + hashlib.sha256(raw).hexdigest(),
        "schema_version": schema_version,
        "claim_count": len(claims),
    }
    if not isinstance(manifest, dict):
        raise ClaimsError("the release manifest must be an object")
    for name, value in expected.items():
        if manifest.get(name) != value:
            raise ClaimsError(
                f"the release manifest's {name} is {manifest.get(name)!r}, the claims file has {value!r}"
            )
    return claims


@lru_cache(maxsize=4)
def _advertised(
    path: str, mtime_ns: int, size: int, manifest_mtime_ns: int
) -> frozenset[tuple[str, str, str, str]]:
    try:
        claims = verify_manifest(Path(path), Path(path).with_name(MANIFEST_FILE.name))
    except ClaimsError:
        return frozenset()  # an unbound or malformed file claims nothing (fail closed)
    return frozenset(claim.key() for claim in claims)


def advertised_claims(claims_path: Path = CLAIMS_FILE) -> frozenset[tuple[str, str, str, str]]:
    """Claim keys usable for ``advertisable`` (re-read whenever a file changes)."""
    try:
        stat = claims_path.stat()
        manifest_stat = claims_path.with_name(MANIFEST_FILE.name).stat()
    except OSError:
        return frozenset()
    return _advertised(str(claims_path), stat.st_mtime_ns, stat.st_size, manifest_stat.st_mtime_ns)


def manifest_for(claims_path: Path) -> dict[str, Any]:
    """The manifest that binds ``claims_path`` (used to write the shipped manifest)."""
    raw = claims_path.read_bytes()
    schema_version, claims = parse_claims(raw)
    return {
        "claims_file": claims_path.name,
        "sha256": "sha256:" + hashlib.sha256(raw).hexdigest(),
        "schema_version": schema_version,
        "claim_count": len(claims),
    }
