"""PyTorch's CPU LayerNorm / RMSNorm timed the way benches/norm_kernels.rs times addnorm.

    /work/main/.venv/bin/python benches/torch_norms.py

One step is y = norm(x), loss = sum(y * dy), loss.backward() with x requiring a gradient,
in float32. The table prints the median over the repetitions and the achieved bandwidth,
counting 8 bytes per element for the forward and 12 for the backward, as in the Rust bench.
"loss only" is the same step with no norm (y = x): torch's own floor for this harness, as
the Rust bench's "loss only" column is Burn's. "norm only" is the difference, the cost of
the norm's forward and backward within the step.
"""

import statistics
import time

import torch

BYTES_PER_ELEMENT = 8 + 12
SHAPES = [("4096×1024", (4096, 1024)), ("8192×512", (8192, 512)),
          ("65536×64", (65536, 64)), ("16384×256", (16384, 256)),
          ("64×8192", (64, 8192)), ("8×32×768", (8, 32, 768))]


def median_seconds(step, warmup, reps):
    for _ in range(warmup):
        step()
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        step()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def step_and_floor(norm, x0, dy):
    """Median seconds of one step y = norm(x), sum(y * dy).backward(), and of the same step
    with no norm (the harness's floor), the repetitions sized as the Rust bench sizes them."""

    def step():
        x = x0.clone().requires_grad_(True)
        (norm(x) * dy).sum().backward()
        return x.grad

    def loss_only():
        x = x0.clone().requires_grad_(True)
        (x * dy).sum().backward()
        return x.grad

    reps = max(5, min(51, 200_000_000 // x0.numel())) | 1
    return median_seconds(step, 2, reps), median_seconds(loss_only, 2, reps)


def main():
    torch.manual_seed(0)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, float32, CPU")
    print(f"{'norm':<8} {'shape':<10} {'median':>12} {'GB/s':>8} {'loss only':>12} {'norm only':>12}")
    for name, make in [("Layer", lambda n: torch.nn.LayerNorm(n)),
                       ("Rms", lambda n: torch.nn.RMSNorm(n, eps=1e-6))]:
        for label, shape in SHAPES:
            norm = make(shape[-1])
            x0 = torch.randn(shape) * 2.0 + 0.5
            dy = torch.randn(shape)
            elements = x0.numel()
            t, floor = step_and_floor(norm, x0, dy)
            print(f"{name:<8} {label:<10} {t * 1e3:>9.2f} ms "
                  f"{BYTES_PER_ELEMENT * elements / t / 1e9:>8.1f} "
                  f"{floor * 1e3:>9.2f} ms {(t - floor) * 1e3:>9.2f} ms")


if __name__ == "__main__":
    main()
