#!/usr/bin/env python3
"""Where a training step's time goes, op by op and thread by thread, from a `perf` profile of
the train_step bench in your loop (the step called from main, default allocator).

    cargo bench -p addnorm-lab --bench train_step --no-run      # prints the binary's path
    perf record -e cpu-clock -F 999 --call-graph dwarf,32768 -o step.data \\
        target/release/deps/train_step-<hash> --alone "d128 T128 (LayerNorm)" --steps 30
    python3 crates/addnorm-lab/benches/step_profile.py step.data

`--call-graph dwarf,32768`: the GEMM's copied-A panel puts a 12 KiB frame on the stack, and
a smaller copy loses the frames above it. `cpu-clock` works where the hypervisor gives no
cycle counter. The profile includes the bench's warm-up steps and its allocation count;
shares, not times, are what it measures.

Each sample gets the op of the innermost kernel entry point in its call stack (the first
matching row of OPS, searched from the leaf outward). The calling thread (the one with the
most samples) carries the op in its stack; a helper thread runs tasks of the caller's
parallel call, its stack holding only the task's closure, so a helper sample takes the op
of the caller's sample nearest in time (within --window ms). Printed:

  1. per op: the caller's samples, the helpers', and their shares;
  2. the helpers' idle samples (lingering between calls: `parallel::linger`);
  3. the caller's samples spent waiting at the end of a parallel call (its leaf is the
     wait in `parallel::with_caller` or a `sched_yield`), by op;
  4. the caller's samples with no busy helper sample within the window, by op: the work
     the caller did alone.

Needs `perf` on the PATH; exits with code 2 on a missing or unreadable profile.
"""

import argparse
import bisect
import collections
import subprocess
import sys

# (op, a substring of a frame's symbol), innermost entry points first.
OPS = [
    ("linear dW", "linear::cpu::backward_parameters"),
    ("linear dX", "linear::cpu::backward_input"),
    ("linear forward", "linear::cpu::forward"),
    ("attention backward", "attention::cpu::backward"),
    ("attention forward", "attention::cpu::forward"),
    ("GELU", "gelu::"),
    ("norm", "norm::"),
    ("gradient sum", "gradient_sum::"),
    ("cross-entropy", "cross_entropy"),
    ("embedding", "embedding::"),
    ("AdamW (Burn's)", "burn_optim::optim::adamw"),
    ("optimizer, other", "burn_optim::"),
    ("model init", "Initializer"),
    ("autodiff graph", "burn_autodiff::"),
]

IDLE = "parallel::linger::linger"
WAITS = ("parallel::with_caller", "sched_yield", "__schedule", "do_sched_yield")


def samples(path):
    """[(tid, time_s, [frame symbols, leaf first])] from `perf script`."""
    try:
        out = subprocess.run(
            ["perf", "script", "-i", path, "-F", "tid,time,ip,sym"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    except (OSError, subprocess.CalledProcessError) as error:
        print(f"step_profile: cannot read {path}: {error}", file=sys.stderr)
        sys.exit(2)
    result = []
    for block in out.split("\n\n"):
        lines = [line.strip() for line in block.strip().split("\n") if line.strip()]
        if not lines:
            continue
        head = lines[0].split()
        frames = [line.split(None, 1)[1] if " " in line else "" for line in lines[1:]]
        result.append((head[0], float(head[1].rstrip(":")), frames))
    return result


def op_of(frames):
    """The op of the innermost entry point among `frames` (leaf first), else "other"."""
    for frame in frames:
        for op, marker in OPS:
            if marker in frame:
                return op
    return "other"


def table(title, rows, total):
    print(f"\n{title}")
    for name, count in rows:
        print(f"  {name:22s} {count:6d}  {100 * count / max(total, 1):5.1f}%")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("profile")
    parser.add_argument("--window", type=float, default=1.0, help="ms (default 1)")
    args = parser.parse_args()
    all_samples = samples(args.profile)
    if not all_samples:
        print(f"step_profile: no samples in {args.profile}", file=sys.stderr)
        sys.exit(2)
    per_thread = collections.Counter(tid for tid, _, _ in all_samples)
    caller = per_thread.most_common(1)[0][0]
    window = args.window / 1000
    calls = sorted((t, op_of(f), f) for tid, t, f in all_samples if tid == caller)
    times = [t for t, _, _ in calls]
    helper_ops, idle, busy_times = collections.Counter(), 0, []
    for tid, t, frames in all_samples:
        if tid == caller:
            continue
        if frames and IDLE in frames[0]:
            idle += 1
            continue
        busy_times.append(t)
        i = bisect.bisect_left(times, t)
        near = [j for j in (i - 1, i) if 0 <= j < len(times) and abs(times[j] - t) <= window]
        best = min(near, key=lambda j: abs(times[j] - t), default=None)
        helper_ops[calls[best][1] if best is not None else "(no caller sample near)"] += 1
    busy_times.sort()
    caller_ops = collections.Counter(op for _, op, _ in calls)
    waits = collections.Counter(
        op for _, op, f in calls if f and any(w in f[0] for w in WAITS)
    )
    alone = collections.Counter()
    for t, op, _ in calls:
        i = bisect.bisect_left(busy_times, t - window)
        if i == len(busy_times) or busy_times[i] > t + window:
            alone[op] += 1
    helpers = sum(n for tid, n in per_thread.items() if tid != caller)
    print(f"caller thread {caller}: {len(calls)} samples; other threads: {helpers} samples")
    print(f"\n{'op':22s} {'caller':>7s} {'share':>6s} {'helpers':>8s} {'share':>6s}")
    for op in sorted(set(caller_ops) | set(helper_ops), key=lambda o: -caller_ops[o] - helper_ops[o]):
        c, h = caller_ops[op], helper_ops[op]
        print(f"{op:22s} {c:7d} {100 * c / len(calls):5.1f}% {h:8d} {100 * h / max(helpers, 1):5.1f}%")
    print(f"{'helpers idle':22s} {'':7s} {'':6s} {idle:8d} {100 * idle / max(helpers, 1):5.1f}%")
    table("caller waiting at the end of a parallel call, by op:", waits.most_common(), len(calls))
    table("caller working with no busy helper within the window, by op:", alone.most_common(), len(calls))


if __name__ == "__main__":
    main()
