#!/usr/bin/env bash
# Run every benchmark and rewrite its section of docs/benchmarks.md (about 10 minutes on
# 2 cores). The openb replay needs ../shared/data/openb (or $GPUPACT_OPENB_DIR).
set -euo pipefail
cd "$(dirname "$0")/.."
python benchmarks/throughput.py --write
python benchmarks/affinity.py --write
python benchmarks/admission.py --update-doc docs/benchmarks.md
python benchmarks/diagnose.py --write
python benchmarks/openb_replay.py --policy all --seeds 42-51 \
    --extra-traces cpu250,gpushare100,multigpu50,gpuspec33 --write
python benchmarks/twin.py --write
python benchmarks/cli_startup.py --write
python benchmarks/ledger_ingest.py --write
python benchmarks/gateway.py --write  # needs wrk (Debian package)
python benchmarks/gang.py --write
python benchmarks/kueue_perf.py --write
python benchmarks/serving_engine.py --write
python benchmarks/plan_accuracy.py --write  # docs/plan-accuracy.md: plan against public measurements
