"""Runs many gpupact command lines in one process (the CLI as users run it, via Typer's
runner) and prints what each did as JSON. test_malformed_inputs.py starts it in a subprocess
with a timeout: a hang fails the test instead of holding the suite.

    python malformed_worker.py < cases.json   # [[arg, ...], ...]
"""

from __future__ import annotations

import json
import sys
import traceback

from typer.testing import CliRunner

from gpupact.cli.main import _register, app


def main() -> None:
    _register()
    runner = CliRunner()
    results = []
    for args in json.load(sys.stdin):
        result = runner.invoke(app, args)
        crash = None
        if result.exception is not None and not isinstance(result.exception, SystemExit):
            crash = "".join(traceback.format_exception(result.exception))[-2000:]
        results.append(
            {
                "code": result.exit_code,
                "stdout": result.stdout,
                "stderr": result.stderr,
                "crash": crash,
            }
        )
    json.dump(results, sys.stdout)


if __name__ == "__main__":
    main()
