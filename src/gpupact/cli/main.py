"""The `gpupact` command line. Each command parses, calls one function, renders.

Exit codes follow kubectl habits: 0 ok, 1 findings (e.g. the pod fits nowhere), 2 bad input.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from enum import StrEnum
from functools import wraps
from typing import Any, TypeVar

import typer
from rich.console import Console

from gpupact import __version__
from gpupact.errors import InputError

app = typer.Typer(
    name="gpupact",
    help="Executable GPU compute contracts for Kubernetes.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
stdout = Console(soft_wrap=True)
stderr = Console(stderr=True, soft_wrap=True)

EXIT_OK, EXIT_FINDINGS, EXIT_BAD_INPUT = 0, 1, 2


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
        except InputError as err:
            stderr.print(f"error: {err}", markup=False, highlight=False)
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
    from gpupact.cli import audit, check, compile, diagnose, fit  # noqa: F401


def main() -> None:
    _register()
    try:
        app()
    except KeyboardInterrupt:
        sys.exit(130)


if __name__ == "__main__":
    main()
