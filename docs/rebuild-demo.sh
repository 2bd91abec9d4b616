#!/usr/bin/env bash
# Rebuilds docs/demo/ (the README's plots and the full report) from a fresh run of the
# README's main command, and the README's generated parts (seeds, wall time, verdicts by
# kind, the claims table) from that run, after recomputing every claim's statistic from its
# demo.json alone (docs/recompute_claims.py, python3). Run it from the repository root on an
# otherwise idle machine:
#
#   bash docs/rebuild-demo.sh            # the default demo, as `cargo run --release -- demo`
#   bash docs/rebuild-demo.sh --full     # the full profile, into docs/demo-full/ and its
#                                        # README line (the claims table stays the default's)
#
# Other flags go to `addnorm demo`. It leaves the run in runs/docs-demo (runs/docs-demo-full)
# and commits nothing.
set -euo pipefail
cd "$(dirname "$0")/.."
name=demo
for arg in "$@"; do
  if [ "$arg" = --full ]; then name=demo-full; fi
done
out=runs/docs-$name
rm -rf "$out"
cargo build --release --bin addnorm
log=$(mktemp)
target/release/addnorm demo --out "$out" "$@" 2>&1 | tee "$log"
line=$(grep -E '^Claims: .*\. In [0-9]+ s\.' "$log" | tail -1)
# A reviewer's check: every claim's statistic recomputed from demo.json alone.
python3 docs/recompute_claims.py "$out/demo.json" | tail -1
seeds=$(sed -n 's/.*Seeds \[\([^]]*\)\].*/\1/p' "$out/report.md" | head -1 | tr ',' '\n' | grep -c .)
cores=$(nproc)
mkdir -p "docs/$name"
rm -f "docs/$name"/*.png
cp "$out"/*.png "$out/report.md" "docs/$name/"
generated="Last rebuilt on $(date -u +%Y-%m-%d) by \`bash docs/rebuild-demo.sh${*:+ $*}\` on $cores cores: \
$seeds seeds; ${line%%. Report*}. The full report: [docs/$name/report.md](docs/$name/report.md)."
marker=rebuild-$name
table="$out/claims.md"
if [ "$name" != demo ]; then table=/dev/null; fi
awk -v text="$generated" -v table="$table" -v marker="$marker" '
  $0 ~ "<!-- " marker ": begin -->" { print; print text; skip = 1; next }
  $0 ~ "<!-- " marker ": end -->" { skip = 0 }
  table != "/dev/null" && /<!-- claims-table: begin -->/ { print; while ((getline line < table) > 0) print line; skip = 1; next }
  table != "/dev/null" && /<!-- claims-table: end -->/ { skip = 0 }
  !skip { print }
' README.md > README.md.new
mv README.md.new README.md
echo "docs/$name/ and README.md rebuilt: $generated"
