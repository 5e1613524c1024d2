"""The `gpupact` command line. Each command parses, calls one function, renders.

Exit codes follow kubectl habits: 0 ok, 1 findings (e.g. the pod fits nowhere), 2 bad input.

Adding a command — `gpupact --version` and `--help` import no command module (numpy, pydantic,
the engine stay unloaded), so a command's module is imported only when that command runs:
  1. write src/gpupact/cli/NAME.py with `@app.command("NAME")` on the `app` of this module
     (import what it needs at its top as usual; never import it from this module);
  2. append one line to COMMANDS below: the name, the module, and the one-line help that
     `gpupact --help` lists (the command function's docstring stays its full `--help`).
A module missing from COMMANDS never runs; tests/cli/test_kubectl_habits.py checks the table
against every `@app.command` in this package.
"""

from __future__ import annotations

import importlib
import os
import re
import sys
from collections.abc import Callable, Iterable
from enum import StrEnum
from functools import wraps
from typing import Any, TypeVar

import typer
from rich.console import Console
from typer.core import TyperCommand, TyperGroup

from gpupact import __version__
from gpupact.errors import FieldError, InputError

# C0 and C1 control characters but tab, newline and NEL: in a name from a cluster or a
# contract, ESC or CSI would drive the terminal (retitle it, hide text, fake output)
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x84\x86-\x9f]")


def visible(text: str) -> str:
    """`text` with control characters shown as `\\x1b` escapes."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


class _Console(Console):
    """Every string printed, table cells included, passes through `visible`: no command has to
    remember it. (Rich's own styling is added after this, so colours still work.)"""

    def render_str(self, text: str, **kwargs: Any) -> Any:
        return super().render_str(visible(text), **kwargs)


# emoji=False: text from the cluster or a contract (":100:") is printed as it is, never as 💯
stdout = _Console(soft_wrap=True, emoji=False)
stderr = _Console(stderr=True, soft_wrap=True, emoji=False)

EXIT_OK, EXIT_FINDINGS, EXIT_BAD_INPUT = 0, 1, 2

# name -> (module that registers it, one line for `gpupact --help`); append new commands here
COMMANDS: dict[str, tuple[str, str]] = {
    "check": ("gpupact.cli.check", "Check a contract: schema, references, the rules."),
    "compile": ("gpupact.cli.compile", "The contract as Kubernetes/Kueue/Volcano objects."),
    "fit": ("gpupact.cli.fit", "Would this pod fit, node by node, and why not."),
    "diagnose": ("gpupact.cli.diagnose", "Why is it Pending: the runbook, evidence, action."),
    "audit": ("gpupact.cli.audit", "Broken discipline in a cluster: findings and fixes."),
    "plan": ("gpupact.cli.plan", "Capacity: memory, KV cache, latency, replicas, pre-warm."),
    "simulate": ("gpupact.cli.simulate", "Run the twin forward in time; report the peak."),
    "sweep": ("gpupact.cli.sweep", "Policies x seeds x scenarios of the twin, in parallel."),
    "ledger": ("gpupact.cli.ledger", "GPU-hour ledger: ingest usage, report, FOCUS export."),
    "review": ("gpupact.cli.review", "The monthly review: owners, raises, waits, retries."),
    "serve": ("gpupact.cli.serve", "Gateway API and /metrics over the twin or a cluster."),
}


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
    input: one `error:` line and exit 2, not Typer's multi-line box. Commands in COMMANDS are
    listed from the table and imported when they are the one being run."""

    def list_commands(self, ctx: Any) -> list[str]:
        loaded = super().list_commands(ctx)
        return [*COMMANDS, *(name for name in loaded if name not in COMMANDS)]

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        command = super().get_command(ctx, cmd_name)
        if command is None and cmd_name in COMMANDS:
            # a stand-in for listing; resolve_command swaps in the real one to run it
            command = TyperCommand(cmd_name, short_help=COMMANDS[cmd_name][1])
        return command

    def format_help(self, ctx: Any, formatter: Any) -> None:
        # plain, as kubectl's top-level help: Typer's Rich panels import ~80 ms of modules
        # before the first line (each command's own --help keeps them)
        super(TyperGroup, self).format_help(ctx, formatter)

    def resolve_command(self, ctx: Any, args: list[str]) -> Any:
        name, command, rest = super().resolve_command(ctx, args)
        if name in COMMANDS and name not in self.commands:
            command = _load(name)
            self.add_command(command, name)
        return name, command, rest

    def main(self, *args: Any, standalone_mode: bool = True, **kwargs: Any) -> Any:
        if not standalone_mode:
            return super().main(*args, standalone_mode=False, **kwargs)
        try:
            code = super().main(*args, standalone_mode=False, **kwargs)
        except _UsageError as err:
            if type(err).__name__ == "NoArgsIsHelpError":
                # the plain help is the message; Rich's help has printed itself already
                text = err.format_message()  # type: ignore[attr-defined]
                if text.strip():
                    sys.stderr.write(text.rstrip("\n") + "\n")
            else:
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
    """`-o`, as kubectl spells it: text (columns on a terminal, plain when piped), wide (more
    columns), name (`kind/name` per line, for xargs), json, yaml."""

    text = "text"
    wide = "wide"
    name = "name"
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


def _load(name: str) -> Any:
    """The click command `name`, importing its module (which registers it on `app`)."""
    importlib.import_module(COMMANDS[name][0])
    group = typer.main.get_command(app)
    command = group.commands.get(name) if hasattr(group, "commands") else None
    if command is None:
        raise RuntimeError(f"{COMMANDS[name][0]} does not register a command named {name!r}")
    return command


def _register() -> None:
    """Import every command module (tests run `app` with all of them registered)."""
    for module, _ in COMMANDS.values():
        importlib.import_module(module)


def _prog_name() -> str:
    # krew installs the plugin as `kubectl-gpupact`, run as `kubectl gpupact`
    invoked = os.path.basename(sys.argv[0])
    return "kubectl gpupact" if invoked.startswith("kubectl-") else "gpupact"


def main() -> None:
    try:
        app(prog_name=_prog_name())
    except KeyboardInterrupt:
        sys.exit(130)
