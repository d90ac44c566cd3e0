"""Global options and where each effective setting comes from (docs/decisions/0018-cli-and-tool-interface.md).

Precedence: command-line flag > environment variable > saved profile. Diagnostics and
``auth status`` report the source of each setting; the token itself is never shown. A profile's
saved token and workspace are used only when the effective instance is the profile's own, so
``--instance`` can never send a saved token to another server.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field

from cli.client import HeraldClient, normalize_instance
from cli.config import ConfigStore, Profile
from cli.errors import UsageProblem

ENV_INSTANCE = "HERALD_INSTANCE"
ENV_PROFILE = "HERALD_PROFILE"
ENV_WORKSPACE = "HERALD_WORKSPACE"
ENV_TOKEN = "HERALD_TOKEN"  # noqa: S105 - the name of a variable, not a secret


@dataclass
class GlobalOptions:
    """The values of ``--instance``, ``--profile``, ``--workspace``, ``--token``, ``--json``."""

    instance: str | None = None
    profile: str | None = None
    workspace: str | None = None
    token: str | None = None
    json: bool = False


@dataclass(frozen=True)
class Setting:
    value: str | None
    source: str  # "flag --instance", "environment HERALD_INSTANCE", "profile 'prod'", "not set"

    @property
    def is_set(self) -> bool:
        return self.value is not None


NOT_SET = Setting(None, "not set")


@dataclass
class HeraldContext:
    options: GlobalOptions = field(default_factory=GlobalOptions)
    store: ConfigStore = field(default_factory=ConfigStore)
    environ: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))

    @property
    def json(self) -> bool:
        return self.options.json

    def _env(self, name: str) -> str | None:
        value = self.environ.get(name, "").strip()
        return value or None

    # --- profile ----------------------------------------------------------------------------

    @property
    def profile_setting(self) -> Setting:
        if self.options.profile:
            return Setting(self.options.profile, "flag --profile")
        if value := self._env(ENV_PROFILE):
            return Setting(value, f"environment {ENV_PROFILE}")
        current = self.store.current_profile()
        if current:
            return Setting(current, "current profile in config.json")
        return NOT_SET

    @property
    def profile(self) -> Profile | None:
        """The selected saved profile; an explicitly named one must exist."""
        setting = self.profile_setting
        if setting.value is None:
            return None
        profile = self.store.profile(setting.value)
        if profile is None:  # only a name from --profile or HERALD_PROFILE can be unknown
            raise UsageProblem(
                f"No profile named {setting.value!r} ({setting.source}); "
                "see `herald instance list` or create it with `herald instance add`."
            )
        return profile

    # --- instance, token, workspace -----------------------------------------------------------

    @property
    def instance_setting(self) -> Setting:
        if self.options.instance:
            return Setting(normalize_instance(self.options.instance), "flag --instance")
        if value := self._env(ENV_INSTANCE):
            return Setting(normalize_instance(value), f"environment {ENV_INSTANCE}")
        profile = self.profile
        if profile is not None:
            return Setting(normalize_instance(profile.instance), f"profile {profile.name!r}")
        return NOT_SET

    def _own_profile(self) -> Profile | None:
        """The profile, when the effective instance is the one it was saved for."""
        profile = self.profile
        if profile is None:
            return None
        if normalize_instance(profile.instance) != self.instance_setting.value:
            return None
        return profile

    @property
    def token_setting(self) -> Setting:
        if self.options.token:
            return Setting(self.options.token.strip(), "flag --token")
        if value := self._env(ENV_TOKEN):
            return Setting(value, f"environment {ENV_TOKEN}")
        profile = self._own_profile()
        if profile is not None and (token := self.store.token(profile.name)):
            return Setting(token, f"credentials.json (profile {profile.name!r})")
        return NOT_SET

    @property
    def workspace_setting(self) -> Setting:
        if self.options.workspace:
            return Setting(self.options.workspace.strip(), "flag --workspace")
        if value := self._env(ENV_WORKSPACE):
            return Setting(value, f"environment {ENV_WORKSPACE}")
        profile = self._own_profile()
        if profile is not None and profile.workspace:
            return Setting(profile.workspace, f"profile {profile.name!r}")
        return NOT_SET

    # --- what commands need -------------------------------------------------------------------

    def require_instance(self) -> str:
        instance = self.instance_setting.value
        if instance is None:
            raise UsageProblem(
                "No instance: pass --instance URL, set HERALD_INSTANCE, or save one with "
                "`herald instance add NAME URL`."
            )
        return instance

    def client(self) -> HeraldClient:
        return HeraldClient(self.require_instance(), self.token_setting.value)

    def require_workspace(self, client: HeraldClient) -> str:
        """The selected workspace, or the only one the token can reach."""
        selected = self.workspace_setting.value
        if selected is not None:
            return selected
        workspaces = client.workspaces()
        if len(workspaces) == 1:
            return str(workspaces[0]["id"])
        if not workspaces:
            raise UsageProblem("The token reaches no workspace.")
        raise UsageProblem(
            f"The token reaches {len(workspaces)} workspaces: choose one with --workspace ID, "
            "HERALD_WORKSPACE or `herald workspace use ID` (see `herald workspace list`)."
        )
