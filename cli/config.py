"""Saved profiles and credentials (docs/decisions/0018-cli-and-tool-interface.md).

``<user config dir>/herald/config.json`` holds the profiles (instance URL, selected workspace) and
the current profile; ``credentials.json`` beside it holds the API token of each profile. Both
files are written atomically and created with mode 0600 inside a 0700 folder, so that another
user of the machine can read neither. ``HERALD_CONFIG_DIR`` names another folder.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import platformdirs

from cli.errors import UsageProblem

CONFIG_FILE = "config.json"
CREDENTIALS_FILE = "credentials.json"
FORMAT_VERSION = 1
PROFILE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,63}$")


def config_dir() -> Path:
    override = os.environ.get("HERALD_CONFIG_DIR")
    if override:
        return Path(override).expanduser()
    return Path(platformdirs.user_config_dir("herald", appauthor=False))


@dataclass(frozen=True)
class Profile:
    name: str
    instance: str
    workspace: str | None = None


def check_profile_name(name: str) -> str:
    if not PROFILE_NAME.match(name):
        raise UsageProblem(
            f"Invalid profile name {name!r}: use letters, digits, '.', '_' or '-' (at most 64)."
        )
    return name


def file_mode(path: Path) -> int | None:
    """The permission bits of ``path``, or None when it does not exist."""
    try:
        return stat.S_IMODE(path.stat().st_mode)
    except FileNotFoundError:
        return None


class ConfigStore:
    def __init__(self, directory: Path | None = None) -> None:
        self.directory = directory if directory is not None else config_dir()

    @property
    def config_path(self) -> Path:
        return self.directory / CONFIG_FILE

    @property
    def credentials_path(self) -> Path:
        return self.directory / CREDENTIALS_FILE

    # --- files ------------------------------------------------------------------------------

    def _read(self, path: Path) -> dict[str, Any]:
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return {}
        except OSError as exc:
            raise UsageProblem(f"Cannot read {path}: {exc.strerror}.") from None
        try:
            data = json.loads(text)
        except ValueError:
            raise UsageProblem(f"{path} is not valid JSON; fix or delete it.") from None
        if not isinstance(data, dict):
            raise UsageProblem(f"{path} does not hold a JSON object; fix or delete it.")
        return data

    def _write(self, path: Path, data: dict[str, Any]) -> None:
        try:
            self._write_private(path, data)
        except OSError as exc:
            raise UsageProblem(
                f"Cannot write {path}: {exc.strerror or type(exc).__name__}."
            ) from None

    def _write_private(self, path: Path, data: dict[str, Any]) -> None:
        """Atomic write of a private file: 0600 from its creation, then renamed into place."""
        self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        descriptor, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=self.directory)
        try:
            if hasattr(os, "fchmod"):  # mkstemp already creates 0600; make it explicit
                os.fchmod(descriptor, 0o600)
            with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
                json.dump(data, handle, indent=2, sort_keys=True)
                handle.write("\n")
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(temporary, path)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(temporary)
            raise
        os.chmod(path, 0o600)

    def _config(self) -> dict[str, Any]:
        data = self._read(self.config_path)
        profiles = data.get("profiles")
        return {
            "version": FORMAT_VERSION,
            "current_profile": data.get("current_profile"),
            "profiles": profiles if isinstance(profiles, dict) else {},
        }

    def _credentials(self) -> dict[str, Any]:
        data = self._read(self.credentials_path)
        profiles = data.get("profiles")
        return {
            "version": FORMAT_VERSION,
            "profiles": profiles if isinstance(profiles, dict) else {},
        }

    # --- profiles ---------------------------------------------------------------------------

    def profiles(self) -> dict[str, Profile]:
        found: dict[str, Profile] = {}
        for name, entry in self._config()["profiles"].items():
            if isinstance(entry, dict) and isinstance(entry.get("instance"), str):
                workspace = entry.get("workspace")
                found[name] = Profile(
                    name, entry["instance"], workspace if isinstance(workspace, str) else None
                )
        return found

    def profile(self, name: str) -> Profile | None:
        return self.profiles().get(name)

    def current_profile(self) -> str | None:
        current = self._config()["current_profile"]
        return current if isinstance(current, str) and current in self.profiles() else None

    def save_profile(self, name: str, instance: str, *, select: bool = False) -> None:
        """Create or update a profile; a changed instance URL forgets its workspace and token."""
        check_profile_name(name)
        config = self._config()
        previous = config["profiles"].get(name)
        entry: dict[str, Any] = {"instance": instance}
        if isinstance(previous, dict) and previous.get("instance") == instance:
            entry = {**previous, "instance": instance}
        elif previous is not None:
            self.clear_token(name)
        config["profiles"][name] = entry
        if select or not isinstance(config["current_profile"], str):
            config["current_profile"] = name
        self._write(self.config_path, config)

    def select(self, name: str) -> Profile:
        profile = self.profile(name)
        if profile is None:
            raise UsageProblem(f"No profile named {name!r}; see `herald instance list`.")
        config = self._config()
        config["current_profile"] = name
        self._write(self.config_path, config)
        return profile

    def set_workspace(self, name: str, workspace_id: str | None) -> None:
        config = self._config()
        entry = config["profiles"].get(name)
        if not isinstance(entry, dict):
            raise UsageProblem(f"No profile named {name!r}; see `herald instance list`.")
        if workspace_id is None:
            entry.pop("workspace", None)
        else:
            entry["workspace"] = workspace_id
        self._write(self.config_path, config)

    def remove(self, name: str) -> None:
        config = self._config()
        if name not in config["profiles"]:
            raise UsageProblem(f"No profile named {name!r}; see `herald instance list`.")
        del config["profiles"][name]
        if config["current_profile"] == name:
            config["current_profile"] = None
        self._write(self.config_path, config)
        self.clear_token(name)

    # --- credentials ------------------------------------------------------------------------

    def token(self, name: str) -> str | None:
        entry = self._credentials()["profiles"].get(name)
        token = entry.get("token") if isinstance(entry, dict) else None
        return token if isinstance(token, str) and token else None

    def set_token(self, name: str, token: str) -> None:
        credentials = self._credentials()
        credentials["profiles"][name] = {"token": token}
        self._write(self.credentials_path, credentials)

    def clear_token(self, name: str) -> bool:
        credentials = self._credentials()
        if name not in credentials["profiles"]:
            return False
        del credentials["profiles"][name]
        self._write(self.credentials_path, credentials)
        return True
