"""The `gpupact` command line. Each command parses, calls one function, renders.

Exit codes follow kubectl habits: 0 ok, 1 findings (e.g. the pod fits nowhere), 2 bad input.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable
from enum import StrEnum
from functools import wraps
from typing import Any, TypeVar

import typer
from rich.console import Console
from typer.core import TyperGroup

from gpupact import __version__
from gpupact.errors import FieldError, InputError

# emoji=False: text from the cluster or a contract (":100:") is printed as it is, never as 💯
stdout = Console(soft_wrap=True, emoji=False)
stderr = Console(stderr=True, soft_wrap=True, emoji=False)

EXIT_OK, EXIT_FINDINGS, EXIT_BAD_INPUT = 0, 1, 2


def print_errors(lines: Iterable[str]) -> None:
    """Each line as `error: <line>` on stderr (several only for several located errors)."""
    for line in lines:
        stderr.print(f"error: {line}", markup=False, highlight=False)


# Typer raises the exceptions of the click it runs on (newer releases vendor their own copy):
# take them from a public class instead of importing click.
_CLICK_ERRORS = {c.__name__: c for c in typer.BadParameter.__mro__}
_ClickException: type[Exception] = _CLICK_ERRORS["ClickException"]
_UsageError: type[Exception] = _CLICK_ERRORS["UsageError"]


class _Commands(TyperGroup):
    """Usage errors (an unknown flag, a missing option, a bad choice) end like every other bad
    input: one `error:` line and exit 2, not Typer's multi-line box."""

    def main(self, *args: Any, standalone_mode: bool = True, **kwargs: Any) -> Any:
        if not standalone_mode:
            return super().main(*args, standalone_mode=False, **kwargs)
        try:
            code = super().main(*args, standalone_mode=False, **kwargs)
        except _UsageError as err:
            if type(err).__name__ != "NoArgsIsHelpError":  # that one has shown the help
                ctx = getattr(err, "ctx", None)
                hint = f" (see '{ctx.command_path} --help')" if ctx is not None else ""
                print_errors([err.format_message() + hint])  # type: ignore[attr-defined]
            sys.exit(err.exit_code)  # type: ignore[attr-defined]
        except _ClickException as err:
            print_errors(err.format_message().splitlines())  # type: ignore[attr-defined]
            sys.exit(err.exit_code)  # type: ignore[attr-defined]
        except typer.Abort:
            sys.exit(EXIT_FINDINGS)
        sys.exit(code if isinstance(code, int) else EXIT_OK)


app = typer.Typer(
    name="gpupact",
    help="Executable GPU compute contracts for Kubernetes.",
    cls=_Commands,
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


class Output(StrEnum):
    text = "text"
    json = "json"
    yaml = "yaml"


F = TypeVar("F", bound=Callable[..., Any])


def user_errors(func: F) -> F:
    """Bad input becomes one line on stderr and exit code 2, never a traceback."""

    @wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except (InputError, FieldError) as err:
            # several located errors (ContractInvalid) print a line each; a FieldError that
            # reaches the edge unlocated is still bad input, with its field path
            print_errors(str(err).splitlines())
            raise typer.Exit(EXIT_BAD_INPUT) from None

    return wrapper  # type: ignore[return-value]


def _version(value: bool) -> None:
    if value:
        stdout.print(f"gpupact {__version__}")
        raise typer.Exit()


@app.callback()
def root(
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Show the version and exit."
    ),
) -> None:
    """gpupact turns scarce GPUs into a resource pool you can make promises about."""


def _register() -> None:
    # imported for their side effect of adding commands to `app`
    from gpupact.cli import audit, check, compile, diagnose, fit, plan, simulate, sweep  # noqa: F401


def main() -> None:
    _register()
    try:
        app()
    except KeyboardInterrupt:
        sys.exit(130)
