"""`gpupact compile`: the contract as Kubernetes objects for kube-scheduler, Kueue, Volcano and
Karpenter, written to a directory for `kubectl apply -k`.

Exit 0 when written, 2 on bad input: a contract that does not load or cannot be compiled (e.g.
a raise without expiry), a bad option, or an output directory gpupact did not write.
"""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path

import typer
from rich.markup import escape

from gpupact.cli.check import contract_file, parse_now
from gpupact.cli.main import EXIT_BAD_INPUT, EXIT_OK, app, print_errors, stdout, user_errors
from gpupact.compile import (
    TARGETS,
    CompileInvalid,
    CompileOptions,
    NodeClassRef,
    compile_contract,
    write_bundle,
)
from gpupact.contract import load_contract
from gpupact.errors import FieldError, InputError


class Format(StrEnum):
    yaml = "yaml"
    json = "json"


class KueueApi(StrEnum):
    v1beta2 = "v1beta2"
    v1beta1 = "v1beta1"


@app.command("compile")
@user_errors
def compile_command(
    file: str | None = typer.Argument(None, help="Contract file (YAML or JSON)."),
    file_option: str | None = typer.Option(None, "-f", "--file", help="Contract file."),
    out: Path = typer.Option(..., "-o", "--out", help="Output directory (replaced atomically)."),
    fmt: Format = typer.Option(Format.yaml, "--format", help="File format of the objects."),
    now: str | None = typer.Option(
        None,
        "--now",
        help="Compile quota raises active at this ISO 8601 time (default: now, UTC).",
    ),
    node_class: str = typer.Option(
        "karpenter.k8s.aws/EC2NodeClass/default",
        "--node-class",
        help="Karpenter node class of every NodePool, as GROUP/KIND/NAME.",
    ),
    kueue_api: KueueApi = typer.Option(
        KueueApi.v1beta2,
        "--kueue-api",
        help="Kueue API version to write: v1beta1 for Kueue before v0.15.",
    ),
) -> None:
    """Compile a contract into Kubernetes, Kueue, Volcano and Karpenter objects."""
    path = contract_file(file, file_option, "gpupact compile CONTRACT.yaml -o OUT/")
    moment = parse_now(now)
    try:
        node_ref = NodeClassRef.parse(node_class)
    except ValueError as err:
        raise InputError(f"--node-class: {err}") from None
    loaded = load_contract(path)
    try:
        options = CompileOptions(now=moment, node_class=node_ref, kueue_api=kueue_api.value)
        bundle = compile_contract(loaded.contract, options)
    except FieldError as err:
        raise loaded.document.error(err) from None
    except CompileInvalid as err:
        print_errors(f"{loaded.file}: cannot compile: {p}" for p in err.problems)
        raise typer.Exit(EXIT_BAD_INPUT) from None
    try:
        written = write_bundle(bundle, out, fmt.value)
    except OSError as err:  # no permission, a file where a folder belongs, a full disk
        blocker = next((p for p in out.parents if p.exists() and not p.is_dir()), None)
        reason = f"{blocker} is a file, not a directory" if blocker else (err.strerror or err)
        raise InputError(f"cannot write {out}: {reason}") from None
    counts = {t: sum(1 for e in bundle.objects if e.target == t) for t in TARGETS}
    summary = ", ".join(f"{n} {t}" for t, n in counts.items() if n)
    stdout.print(
        f"compiled contract {escape(bundle.contract)}: {len(bundle.objects)} objects "
        f"({escape(summary)}) -> {escape(str(out))}/ ({len(written)} files); "
        f"apply with: kubectl apply -k {escape(str(out))}",
        highlight=False,
    )
    raise typer.Exit(EXIT_OK)
