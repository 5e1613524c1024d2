"""`gpupact compile`: the contract as Kubernetes objects for kube-scheduler, Kueue, Volcano and
Karpenter, written to a directory for `kubectl apply -k`, or printed.

    gpupact compile contract.yaml --output-dir out/      # files + kustomization.yaml
    gpupact compile contract.yaml -o yaml | kubectl apply -f -
    gpupact compile contract.yaml -o name                # kind.group/name per object

`-o` is the output format, as everywhere (yaml, json, name; with --output-dir, yaml or json is
the format of the files). Exit 0 when written, 2 on bad input: a contract that does not load or
cannot be compiled (e.g. a raise without expiry), a bad option, or an output directory gpupact
did not write.
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
    Bundle,
    CompileInvalid,
    CompileOptions,
    NodeClassRef,
    compile_contract,
    write_bundle,
)
from gpupact.compile.writer import object_names, render_stream
from gpupact.contract import load_contract
from gpupact.errors import FieldError, InputError

FORMATS = ("yaml", "json", "name")


def output_format(value: str | None, output_dir: Path | None) -> str:
    """`-o` checked by hand, so the old `-o DIR` gets a pointer to --output-dir."""
    if value is None:
        return "yaml"
    if value in FORMATS:
        return value
    if value in ("text", "wide"):
        raise InputError(f"-o {value}: compile prints objects; use -o yaml, json or name")
    hint = "" if output_dir is not None else f"; to write files use --output-dir {value}"
    raise InputError(f"-o is the output format ({', '.join(FORMATS)}), got {value!r}{hint}")


class KueueApi(StrEnum):
    v1beta2 = "v1beta2"
    v1beta1 = "v1beta1"


@app.command("compile")
@user_errors
def compile_command(
    file: str | None = typer.Argument(None, help="Contract file (YAML or JSON)."),
    file_option: str | None = typer.Option(None, "-f", "--file", help="Contract file."),
    output_dir: Path | None = typer.Option(
        None,
        "-d",
        "--output-dir",
        help="Write the files here for `kubectl apply -k` (the directory is replaced atomically).",
    ),
    output: str | None = typer.Option(
        None,
        "-o",
        "--output",
        help="Output format: yaml, json, name (default yaml; with --output-dir, the files').",
    ),
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
    path = contract_file(file, file_option, "gpupact compile CONTRACT.yaml --output-dir OUT/")
    fmt = output_format(output, output_dir)
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
    if output_dir is None:
        _print(bundle, fmt)
        raise typer.Exit(EXIT_OK)
    out = output_dir
    try:
        written = write_bundle(bundle, out, "yaml" if fmt == "name" else fmt)
    except OSError as err:  # no permission, a file where a folder belongs, a full disk
        blocker = next((p for p in out.parents if p.exists() and not p.is_dir()), None)
        reason = f"{blocker} is a file, not a directory" if blocker else (err.strerror or err)
        raise InputError(f"cannot write {out}: {reason}") from None
    if fmt == "name":
        _print(bundle, fmt)
        raise typer.Exit(EXIT_OK)
    counts = {t: sum(1 for e in bundle.objects if e.target == t) for t in TARGETS}
    summary = ", ".join(f"{n} {t}" for t, n in counts.items() if n)
    stdout.print(
        f"compiled contract {escape(bundle.contract)}: {len(bundle.objects)} objects "
        f"({escape(summary)}) -> {escape(str(out))}/ ({len(written)} files); "
        f"apply with: kubectl apply -k {escape(str(out))}",
        highlight=False,
    )
    raise typer.Exit(EXIT_OK)


def _print(bundle: Bundle, fmt: str) -> None:
    text = "\n".join(object_names(bundle)) if fmt == "name" else render_stream(bundle, fmt)
    stdout.print(text.rstrip("\n"), markup=False, highlight=False)
