#!/usr/bin/env bash
# Issue 25 on a many-core machine: thread-count independence, the train_step bench on two
# pinned cores and on every core, and the d128 step's scaling with the thread count, beside
# PyTorch on the same cores (each bench ends with torch / yours in PAIRS alternated pairs of
# processes, default 3). It builds nothing: give it the release binary and the bench's
# binary, built elsewhere (`cargo build --release`; `cargo bench --bench train_step --no-run`),
# and optionally P, the FMA-peak example (`cargo build --release -p addnorm-kernels --example
# fma_peak`). Kernels PERFORMANCE.md §28 reports its first run, §33 its second.
#
#   A=target/release/addnorm B=target/release/deps/train_step-<hash> \
#     P=target/release/examples/fma_peak OUT=runs/many-cores \
#     bash crates/addnorm-lab/benches/many_cores.sh
#
# The bench finds PyTorch's script by the path it was built in; run this from a checkout at
# that path (or link one there). Each part's full output goes to $OUT/<part>.txt; the summary,
# last, to $OUT/summary.txt and to standard output. On the 2-core VM that the project's
# numbers come from, the Pre-LN check gives metrics.csv 88f34b38…, the Post-LN one d1cb8901…
# and the quick demo's 304 runs 8f746956… (md5 of their sorted md5sum list).
set -u
A=${A:?the addnorm release binary}
B=${B:?the train_step bench binary}
OUT=${OUT:-runs/many-cores}
# Torch / yours in alternated pairs per model after each bench (the bench's `--pairs`).
PAIRS=${PAIRS:-3}
work=$(mktemp -d)
mkdir -p "$OUT"
summary="$OUT/summary.txt"
: >"$summary"
say() { echo "$*" | tee -a "$summary"; }

# The first CPU of each of the first N physical cores, comma-separated (for taskset).
cores() {
  lscpu -p=CPU,CORE | grep -v '^#' | sort -t, -k2,2n -k1,1n \
    | awk -F, '!seen[$2]++ { print $1 }' | head -n "$1" | paste -sd,
}

{
  lscpu
  echo "nproc $(nproc)"
  python3 -c 'import torch; print("torch", torch.__version__)'
} >"$OUT/machine.txt" 2>&1
say "machine: $(grep -m1 'Model name' "$OUT/machine.txt" | sed 's/.*: *//'), $(nproc) CPUs, \
$(lscpu -p=CORE | grep -v '^#' | sort -u | wc -l) cores, \
avx512f: $(grep -c avx512f /proc/cpuinfo | awk '{print ($1 > 0) ? "yes" : "no"}'), \
$(grep -m1 torch "$OUT/machine.txt")"

# 0. The f32 FMA peak on 1, 2 pinned and every core.
if [ -n "${P:-}" ]; then
  say "FMA peak (threads, GFLOP/s, per thread): \
$(taskset -c "$(cores 2)" "$P" 2 | tail -2 | tr -s ' ' | paste -sd';'); \
$("$P" "$(nproc)" | tail -1 | tr -s ' ')"
fi

# 1. The same run on 1, 2 and every thread: metrics.csv must be byte-equal.
for t in $(printf "%s\n" 1 2 "$(nproc)" | sort -nu); do
  RAYON_NUM_THREADS=$t "$A" train --placement pre --depth 6 --lr 0.01 --warmup 0 --steps 250 \
    --eval-every 25 --stats-every 250 --checkpoint-every 250 --out "$work/pre$t" >/dev/null 2>&1
  RAYON_NUM_THREADS=$t "$A" train --placement post --d-model 64 --depth 4 --lr 0.003 \
    --steps 120 --eval-every 20 --out "$work/post$t" >/dev/null 2>&1
  say "threads $t: pre $(md5sum <"$work/pre$t/metrics.csv" | cut -c1-8), \
post $(md5sum <"$work/post$t/metrics.csv" | cut -c1-8)"
done

# 2. The bench on two pinned physical cores: the issue's setting.
two=$(cores 2)
taskset -c "$two" env RAYON_NUM_THREADS=2 "$B" --steps 40 --pairs "$PAIRS" >"$OUT/bench2.txt" 2>&1
say "bench on cores $two:"
sed -n '/^model/,$p' "$OUT/bench2.txt" | tee -a "$summary"

# 3. The README's main job with the VM's seed count, one worker process per CPU (DEMO=0
#    skips it: about 150 s on 16 CPUs).
if [ "${DEMO:-1}" != 0 ]; then
start=$(date +%s)
"$A" demo --seeds 8 --out "$work/demo" >"$OUT/demo.txt" 2>&1
say "demo: rc $?, $(($(date +%s) - start)) s on $(nproc) CPUs, runs \
$(cd "$work/demo" && find . -name metrics.csv | wc -l), md5 \
$(cd "$work/demo" && find . -name metrics.csv | LC_ALL=C sort | xargs md5sum | md5sum | cut -c1-12)"
for png in docs/demo/*.png; do
  cmp -s "$png" "$work/demo/$(basename "$png")" || say "plot differs: $(basename "$png")"
done
say "plots compared: $(ls docs/demo/*.png | wc -l)"
fi

# 4. The bench on every CPU.
RAYON_NUM_THREADS=$(nproc) "$B" --steps 40 --pairs "$PAIRS" >"$OUT/bench-all.txt" 2>&1
say "bench on $(nproc) threads:"
sed -n '/^model/,$p' "$OUT/bench-all.txt" | tee -a "$summary"

# 5. The d128 step against the thread count (your loop, fused, and PyTorch), pinned.
say "d128 scaling (threads: your loop ms, torch ms):"
for t in 1 4 8; do
  set=$(cores "$t")
  ours=$(taskset -c "$set" env RAYON_NUM_THREADS="$t" "$B" --model d128 --no-torch --no-tuned \
    --fused-only --steps 20 2>&1 | tee "$OUT/d128-$t.txt" | grep -m1 '^d128')
  theirs=$(taskset -c "$set" python3 crates/addnorm-lab/benches/torch_train_step.py \
    --threads "$t" --steps 20 2>&1 | grep d128)
  say "$t: $ours"
  say "$t: $theirs"
done

# 6. Lingering helpers on every core (parallel.rs, `ADDNORM_LINGER_US`; 0 turns it off): the
#    fused step in your loop with and without, alternated, both orders. Each line is one
#    process's medians.
say "lingering on $(nproc) threads (ms a step; off = ADDNORM_LINGER_US=0):"
for linger in on off off on; do
  [ "$linger" = off ] && l=0 || l=
  line=$(env ${l:+ADDNORM_LINGER_US=$l} RAYON_NUM_THREADS="$(nproc)" "$B" --no-torch \
    --no-tuned --fused-only --steps 20 2>&1 | sed -n '/^model/,/^$/p' | grep ' ms ' \
    | sed -E 's/ +([0-9.]+) ms.*/ \1/' | paste -sd';')
  say "$linger: $line"
done
rm -rf "$work"
