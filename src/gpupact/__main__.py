"""`python -m gpupact`: the same command line as the `gpupact` script."""

from gpupact.cli.main import main

main()
