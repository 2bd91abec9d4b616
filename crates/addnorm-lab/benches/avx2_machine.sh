#!/usr/bin/env bash
# An AVX2 machine on an AVX-512 one (kernels PERFORMANCE.md §48). `matrixmultiply` picks its
# kernel by the CPU's AVX-512F alone, so `ADDNORM_CPU_DISPATCH=avx2` by itself leaves `sgemm`
# (and so the direct GEMM, which must give its bits) on AVX-512. A build with
# `MMTEST_FEATURE=fma,avx2` (`matrixmultiply`'s compile-time list of the features it may
# detect, which addnorm's kernels read too) runs `sgemm`'s FMA kernel and the direct AVX2
# kernel beside it; `ADDNORM_CPU_DISPATCH=avx2` then puts the element-wise kernels on AVX2,
# and torch is kept to AVX2 by `ATEN_CPU_CAPABILITY`, `MKL_ENABLE_INSTRUCTIONS` and
# `ONEDNN_MAX_CPU_ISA`. On a Zen 4, whose 512-bit FMAs are two 256-bit halves, that is a
# Zen 3's arithmetic per cycle.
#
#   bash crates/addnorm-lab/benches/avx2_machine.sh check
#   bash crates/addnorm-lab/benches/avx2_machine.sh bench [train_step arguments]
#
# `check`: the kernels' tests (release) with and without the dispatch cap, then `bits.sh` on
# the emulated build's `addnorm` (the same twelve md5s as on every other machine). `bench`:
# the `train_step` bench beside torch, both kept to AVX2 (e.g. `bench --model d128 --steps
# 20 --pairs 8 --no-tuned`). The build goes to $CARGO_TARGET_DIR (default target/avx2), apart
# from the native one; the first takes about as long as a release build of the workspace.
# Exits 2 on a usage error, 1 when a check fails.
set -u
here=$(cd "$(dirname "$0")" && pwd)
export MMTEST_FEATURE=fma,avx2
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-target/avx2}
if ! grep -qw avx512f /proc/cpuinfo 2>/dev/null; then
  echo "avx2_machine.sh: this CPU has no AVX-512F; its own build already runs the AVX2 kernels" >&2
fi
case "${1:-}" in
  check)
    failed=0
    for cap in avx2 ""; do
      echo "== kernels' tests, ADDNORM_CPU_DISPATCH=${cap:-(unset)}"
      out=$(ADDNORM_CPU_DISPATCH=$cap cargo test --release -p addnorm-kernels 2>&1) || failed=1
      echo "$out" | grep -E "^test result|FAILED|panicked|^error"
    done
    cargo build --release -q || exit 1
    echo "== bits.sh, ADDNORM_CPU_DISPATCH=avx2"
    ADDNORM_CPU_DISPATCH=avx2 bash "$here/bits.sh" "$CARGO_TARGET_DIR/release/addnorm" || failed=1
    exit $failed
    ;;
  bench)
    shift
    ADDNORM_CPU_DISPATCH=avx2 ATEN_CPU_CAPABILITY=avx2 MKL_ENABLE_INSTRUCTIONS=AVX2 \
      ONEDNN_MAX_CPU_ISA=AVX2 cargo bench -p addnorm-lab --bench train_step -- "$@"
    ;;
  *)
    echo "usage: avx2_machine.sh check | bench [train_step arguments]" >&2
    exit 2
    ;;
esac
