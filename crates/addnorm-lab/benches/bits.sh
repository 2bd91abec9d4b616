#!/usr/bin/env bash
# "Same bits": twelve short `addnorm train` runs whose metrics.csv (every step's loss, grad
# norm and validation metrics, printed to nine digits or more) must keep its md5 through a
# change that claims to change no bit. The runs cover the placements (Pre-LN, Post-LN,
# NormFormer), the norms (LayerNorm, RMSNorm, DyT), the soft-capped attention, another
# sequence length, one and two threads, and the kernels' baseline and AVX2 copies
# (ADDNORM_CPU_DISPATCH=baseline, =avx2) beside the machine's own. The expected md5s are
# those recorded since the kernels' PERFORMANCE.md §43 changed the bits last (§44–§47, on
# Zen 4 and Emerald Rapids VMs); a change that means to change bits updates them here,
# with the reason in its commit.
#
#   cargo build --release
#   bash crates/addnorm-lab/benches/bits.sh [target/release/addnorm]
#
# Prints one line per run (name, md5 prefix, ok or CHANGED) and exits 1 if any changed, 2 if
# the binary is missing. A few seconds on 2 cores.
set -u
BIN=${1:-target/release/addnorm}
if [ ! -x "$BIN" ]; then
  echo "bits.sh: no executable at $BIN (cargo build --release first)" >&2
  exit 2
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
changed=0
# run NAME EXPECTED [VAR=value ...] -- train arguments
run() {
  local name=$1 expected=$2
  shift 2
  local env=()
  while [ "$1" != "--" ]; do env+=("$1"); shift; done
  shift
  local out="$work/$name"
  if ! env "${env[@]}" "$BIN" train --out "$out" "$@" >"$work/$name.log" 2>&1; then
    echo "$name: the run failed (log below)"; tail -5 "$work/$name.log"; changed=1; return
  fi
  local got
  got=$(md5sum "$out/metrics.csv" | cut -c1-8)
  if [ "$got" = "$expected" ]; then
    echo "$name $got ok"
  else
    echo "$name $got CHANGED (expected $expected)"; changed=1
  fi
}
d128=(--d-model 128 --depth 2 --lr 0.003 --steps 40 --eval-every 10)
short=(--steps 60 --eval-every 20)
normformer=(--placement pre --normformer --depth 6 --lr 0.01 --warmup 0 "${short[@]}")
run d128-pre f65bb5b6 -- --placement pre "${d128[@]}"
run d128-pre-1-thread f65bb5b6 RAYON_NUM_THREADS=1 -- --placement pre "${d128[@]}"
run d128-post 3e8df242 -- --placement post "${d128[@]}"
run default 72feadf1 -- "${short[@]}"
run normformer bba82ec6 -- "${normformer[@]}"
run normformer-1-thread bba82ec6 RAYON_NUM_THREADS=1 -- "${normformer[@]}"
run dyt a364b4f2 -- --norm dyt "${short[@]}"
run dyt-baseline a364b4f2 ADDNORM_CPU_DISPATCH=baseline -- --norm dyt "${short[@]}"
run d128-pre-avx2 f65bb5b6 ADDNORM_CPU_DISPATCH=avx2 -- --placement pre "${d128[@]}"
run softcap 62c8b4bb -- --attention-softcap 5 "${short[@]}"
run length-40 304e7263 -- --length 40 "${short[@]}"
run rms 398a3a5d -- --norm rms "${short[@]}"
exit $changed
