#!/usr/bin/env bash
# A sweep on one multi-core machine with `xargs -P`: P independent worker processes on one
# directory. Each claims runs before training them, so every run is trained once, and the
# last worker to finish writes the report (sweep.json and the tables).
#
# Usage: examples/cluster/xargs_box.sh [WORKERS] [OUT]
#   WORKERS  processes (default: the core count); OUT (default runs/sweep)
#
# On one machine `addnorm sweep --jobs N` does the same in one process; separate processes
# are for mixing with other work (start or kill a worker at any time) or for one worker per
# GPU (pin each with CUDA_VISIBLE_DEVICES / WGPU_ADAPTER_NAME).
set -euo pipefail

WORKERS="${1:-$(nproc)}"
OUT="${2:-runs/sweep}"
BIN="${ADDNORM_BIN:-target/release/addnorm}"
SWEEP_ARGS=(--placements post,pre --depths 4 --warmups 0,100
            --lrs 3e-4,1e-3,3e-3,1e-2,3e-2 --seeds 4)

cargo build --release -p addnorm-lab

# One process per worker, one run at a time each (--jobs 1 --threads 1): the workers
# together use the cores.
seq "$WORKERS" | xargs -P "$WORKERS" -I{} \
  "$BIN" sweep --out "$OUT" --jobs 1 --threads 1 "${SWEEP_ARGS[@]}"

# Every worker exited 0; rebuild the report from the finished runs (exit 2 names any
# missing run, e.g. after a worker was killed: rerun this script to finish them).
"$BIN" report --out "$OUT"
