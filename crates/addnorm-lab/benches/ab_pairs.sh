#!/usr/bin/env bash
# Two builds of the train_step bench, one model's step in your loop, in alternated pairs:
# each round runs both binaries' `--alone MODEL` back to back in fresh processes, the first
# alternating, and the summary gives the median of the rounds' new / old step time, its
# range and the rounds the new binary won. On a shared, noisy host this is how a change's
# effect on the step is measured (kernels PERFORMANCE.md §34–§35).
#
#   OLD=/tmp/train_step-old NEW=target/release/deps/train_step-<hash> \
#     bash crates/addnorm-lab/benches/ab_pairs.sh
#
# Build each binary with `cargo bench --bench train_step --no-run` at its commit and copy it
# out of target/ before building the other. Options (environment): ROUNDS (default 10),
# MODEL (default "d128 T128 (LayerNorm)", a row label of the bench's table), STEPS (default 40).
# Exit code 2 when a binary is missing or a run prints no step time.
set -u
OLD=${OLD:?the old train_step bench binary}
NEW=${NEW:?the new train_step bench binary}
ROUNDS=${ROUNDS:-10}
MODEL=${MODEL:-d128 T128 (LayerNorm)}
STEPS=${STEPS:-40}
for binary in "$OLD" "$NEW"; do
  [ -x "$binary" ] || { echo "ab_pairs: $binary is not an executable" >&2; exit 2; }
done

# The median step time in ns of one `--alone` run (the bench's `phases-ns` line, last field).
step_ns() {
  "$1" --alone "$MODEL" --steps "$STEPS" 2>&1 | awk '/^phases-ns/ { print $NF }'
}

ratios=()
echo "round  old ms   new ms   new/old"
for round in $(seq 1 "$ROUNDS"); do
  if [ $((round % 2)) -eq 1 ]; then
    old=$(step_ns "$OLD"); new=$(step_ns "$NEW")
  else
    new=$(step_ns "$NEW"); old=$(step_ns "$OLD")
  fi
  if [ -z "$old" ] || [ -z "$new" ]; then
    echo "ab_pairs: round $round printed no step time (is \"$MODEL\" a model of the bench?)" >&2
    exit 2
  fi
  ratio=$(awk -v o="$old" -v n="$new" 'BEGIN { printf "%.3f", n / o }')
  ratios+=("$ratio")
  awk -v r="$round" -v o="$old" -v n="$new" -v q="$ratio" \
    'BEGIN { printf "%5d  %7.1f  %7.1f  %s\n", r, o / 1e6, n / 1e6, q }'
done
printf '%s\n' "${ratios[@]}" | sort -n | awk -v model="$MODEL" '
  { r[NR] = $1; if ($1 < 1) won++ }
  END {
    median = NR % 2 ? r[(NR + 1) / 2] : (r[NR / 2] + r[NR / 2 + 1]) / 2
    printf "%s: new/old median %.3f (%.3f-%.3f), new faster in %d of %d\n", \
      model, median, r[1], r[NR], won, NR
  }'
