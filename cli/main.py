"""The ``herald`` command: global options, error reporting, and the command tree."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

from cli import cli_version
from cli.context import GlobalOptions, HeraldContext
from cli.errors import EXIT_CODES_HELP, EXIT_FAILED, HeraldError
from cli.output import echo, printable
from cli.redact import redact

F = TypeVar("F", bound=Callable[..., Any])

_OPTIONS_KEY = "herald.options"
_CONTEXT_KEY = "herald.context"


def _options(ctx: click.Context) -> GlobalOptions:
    options = ctx.meta.get(_OPTIONS_KEY)
    if options is None:
        options = ctx.meta[_OPTIONS_KEY] = GlobalOptions()
    return options


def _remember(name: str) -> Callable[[click.Context, click.Parameter, Any], Any]:
    """Record a global option given on the group or on the command (the later one wins)."""

    def callback(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
        if value is not None and value is not False:
            setattr(_options(ctx), name, value)
        return value

    return callback


def polling_options(interval_help: str, timeout_help: str) -> Callable[[F], F]:
    """``--interval`` and ``--timeout`` of the commands that poll until something settles."""

    def decorate(f: F) -> F:
        f = click.option(
            "--timeout",
            type=click.FloatRange(1),
            default=600,
            show_default=True,
            help=timeout_help,
        )(f)
        return click.option(
            "--interval",
            type=click.FloatRange(0.1, 60),
            default=2.0,
            show_default=True,
            help=interval_help,
        )(f)

    return decorate


def global_options(f: F) -> F:
    """The global options, accepted before or after the subcommand (docs/decisions/0018)."""
    decorators = [
        click.option(
            "--json",
            "json_output",
            is_flag=True,
            default=False,
            expose_value=False,
            callback=_remember("json"),
            help="Print JSON instead of text.",
        ),
        click.option(
            "--token",
            metavar="TOKEN",
            expose_value=False,
            callback=_remember("token"),
            help="API token (env HERALD_TOKEN; prefer `herald auth login`).",
        ),
        click.option(
            "--workspace",
            metavar="ID",
            expose_value=False,
            callback=_remember("workspace"),
            help="Workspace ID (env HERALD_WORKSPACE).",
        ),
        click.option(
            "--profile",
            metavar="NAME",
            expose_value=False,
            callback=_remember("profile"),
            help="Saved profile (env HERALD_PROFILE).",
        ),
        click.option(
            "--instance",
            metavar="URL",
            expose_value=False,
            callback=_remember("instance"),
            help="Instance URL, without saved state (env HERALD_INSTANCE).",
        ),
    ]
    for decorate in decorators:
        f = decorate(f)
    return f


def current() -> HeraldContext:
    """The effective settings of this invocation (built once the whole line is parsed)."""
    ctx = click.get_current_context()
    herald = ctx.meta.get(_CONTEXT_KEY)
    if herald is None:
        herald = ctx.meta[_CONTEXT_KEY] = HeraldContext(options=_options(ctx))
    return herald


def _redact_click_error(exc: click.ClickException) -> None:
    """Click quotes the offending argument ("No such command 'hrld_…'"); hide secrets in it."""
    exc.message = printable(redact(exc.message))  # type: ignore[misc]  # typed Final, but a plain attribute


class HeraldGroup(click.Group):
    """Reports every error as one redacted line with its documented exit code.

    A :class:`HeraldError` keeps its own exit code; a usage error of click (a mistyped command
    line may hold a token) is redacted before click prints it; anything unexpected is one line
    with exit 1 instead of a traceback that could quote a secret.
    """

    def make_context(
        self,
        info_name: str | None,
        args: list[str],
        parent: click.Context | None = None,
        **extra: Any,
    ) -> click.Context:
        try:
            return super().make_context(info_name, args, parent=parent, **extra)
        except click.ClickException as exc:
            _redact_click_error(exc)
            raise

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except HeraldError as exc:
            echo(f"herald: error: {redact(str(exc))}", err=True)
            ctx.exit(exc.exit_code)
        except click.ClickException as exc:
            _redact_click_error(exc)
            raise
        except (click.exceptions.Exit, click.exceptions.Abort, KeyboardInterrupt):
            raise
        except Exception as exc:
            message = redact(" ".join(str(exc).split()))[:300]
            echo(
                f"herald: error: unexpected {type(exc).__name__}: {message} "
                "(a bug in herald; please report it)",
                err=True,
            )
            ctx.exit(EXIT_FAILED)


CONTEXT_SETTINGS = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


@click.group(
    cls=HeraldGroup,
    context_settings=CONTEXT_SETTINGS,
    epilog=EXIT_CODES_HELP
    + "\n\n\b\nSettings: flag > environment (HERALD_INSTANCE, HERALD_PROFILE, HERALD_WORKSPACE,"
    "\nHERALD_TOKEN) > saved profile. Profiles (config.json) and tokens (credentials.json),"
    "\nboth mode 0600, live in <user config dir>/herald, or in HERALD_CONFIG_DIR.",
)
@click.version_option(cli_version(), "-V", "--version", prog_name="herald")
@global_options
def herald() -> None:
    """Operate a Herald instance: health, diagnostics, provider readiness, publications.

    Global options may be given before or after the subcommand.
    """


def _register() -> None:
    from cli.commands import (
        account,
        auth,
        events,
        instance,
        mcp,
        media,
        provider,
        publication,
        schedule,
        workspace,
    )

    for module in (
        instance,
        auth,
        provider,
        workspace,
        account,
        media,
        publication,
        schedule,
        events,
        mcp,
    ):
        herald.add_command(module.group)


_register()


def main() -> None:
    herald(prog_name="herald")
