"""PyTorch's CPU GroupNorm / InstanceNorm timed the way benches/norm_kernels.rs times
addnorm's (its GroupNorm table runs this as a child process, same thread count).

    python benches/torch_group_norm.py [threads]

One step is y = norm(x), loss = sum(y * dy), loss.backward() with x requiring a gradient,
in float32, on the shapes of the Rust table; "loss only" is the same step with no norm
(y = x), torch's floor for this harness. Prints one line per case: label, median
milliseconds of the step, and of the loss-only step.
"""

import sys

import torch

# The same timing as the LayerNorm script's (this directory is on the import path).
from torch_norms import step_and_floor

CASES = [
    ("GroupNorm 32 groups", (32, 64, 32, 32), 32),
    ("InstanceNorm", (32, 64, 32, 32), 64),
    ("GroupNorm 8 groups", (8, 256, 16, 16), 8),
]


def main():
    if len(sys.argv) > 1:
        torch.set_num_threads(int(sys.argv[1]))
    torch.manual_seed(0)
    for label, shape, groups in CASES:
        norm = torch.nn.GroupNorm(groups, shape[1])
        x0 = torch.randn(shape) * 2.0 + 0.5
        dy = torch.randn(shape)

        t, floor = step_and_floor(norm, x0, dy)
        print(f"{label}\t{t * 1e3:.4f}\t{floor * 1e3:.4f}")


if __name__ == "__main__":
    main()
