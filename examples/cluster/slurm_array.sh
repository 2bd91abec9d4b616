#!/usr/bin/env bash
# A sweep spread over a Slurm job array: every array task is one `addnorm sweep` worker on
# the same shared directory (NFS is fine: workers claim runs with create-new files and
# renames). Each run is trained once; a task that dies leaves a stale claim that another
# task (or a rerun of this script) takes over, resuming the run from its checkpoint.
# A last job, started only when the whole array succeeded, writes the report.
#
# Usage: examples/cluster/slurm_array.sh [WORKERS] [OUT]
#   WORKERS  array tasks (default 8); OUT  a directory every node sees (default runs/sweep)
# Edit the sweep's grid in SWEEP_ARGS; every worker must get the same grid (a worker
# pointed at a directory of another grid exits 2 and names the differing field).
set -euo pipefail

WORKERS="${1:-8}"
OUT="${2:-$PWD/runs/sweep}"
CPUS_PER_TASK="${CPUS_PER_TASK:-4}"
BIN="${ADDNORM_BIN:-$PWD/target/release/addnorm}"
SWEEP_ARGS=(--placements post,pre --depths 4,8 --warmups 0,100
            --lrs 3e-4,1e-3,3e-3,1e-2,3e-2 --seeds 10)

cargo build --release -p addnorm-lab
mkdir -p "$OUT/slurm"

# One worker per array task; --jobs uses the task's cores (one run per core).
array_id=$(sbatch --parsable \
  --job-name=addnorm-sweep \
  --array="0-$((WORKERS - 1))" \
  --cpus-per-task="$CPUS_PER_TASK" \
  --time=04:00:00 \
  --output="$OUT/slurm/worker-%A_%a.log" \
  --wrap="$BIN sweep --out $OUT --jobs $CPUS_PER_TASK ${SWEEP_ARGS[*]}")

# The report, once every task of the array exited 0. `report` exits 2 and names the runs
# that are missing if a task died (rerun this script: finished runs are kept).
sbatch --dependency="afterok:$array_id" \
  --job-name=addnorm-report \
  --cpus-per-task=1 \
  --time=00:10:00 \
  --output="$OUT/slurm/report-%j.log" \
  --wrap="$BIN report --out $OUT"

echo "submitted array $array_id ($WORKERS workers) and its report; results in $OUT"
