#!/usr/bin/env bash
# The demo's verdicts at 3, 8 and 10 seeds side by side (docs/demo/seed-counts.md): runs
# `addnorm demo --seeds N` for each count into runs/seeds-N and tabulates the verdicts with
# docs/seed_counts.py (python3, standard library only), after recomputing every claim's
# statistic from each run's demo.json alone (docs/recompute_claims.py). A verdict that changes with the
# seed count is marked fragile. Run it from the repository root on an otherwise idle
# machine; about 15 minutes on 2 cores. It commits nothing.
#
#   bash docs/seed-counts.sh            # 3, 8 and 10 seeds
#   bash docs/seed-counts.sh 3 10 20    # other counts
set -euo pipefail
cd "$(dirname "$0")/.."
counts=("$@")
[ ${#counts[@]} -gt 0 ] || counts=(3 8 10)
cargo build --release --bin addnorm
reports=()
for n in "${counts[@]}"; do
  out=runs/seeds-$n
  rm -rf "$out"
  target/release/addnorm demo --out "$out" --seeds "$n" 2>&1 | grep -E '^Claims: '
  python3 docs/recompute_claims.py "$out/demo.json" | tail -1
  reports+=("$out/demo.json")
done
mkdir -p docs/demo
python3 docs/seed_counts.py "${reports[@]}" > docs/demo/seed-counts.md
echo "docs/demo/seed-counts.md written"
