"""Row (b) against row (a) of bench_mujoco.py in instructions, not time: the same envs, the same actions.

    valgrind --tool=callgrind --callgrind-out-file=OUT python bench/mujoco_instructions.py TASK {limit,shoal} N K

steps N envs of TASK K times (after 20 warm-up steps) either in the bare C loop (bench/native/mujoco_limit.c,
which also runs its warm-up and set-up for K = 0) or with shoal Multithreading T=0, with the C loop's own
actions (its LCG batches, regenerated here) and seeds, so the physics is the same instruction for instruction
(mj_step's inclusive count is equal in both). Run each for two K and subtract: the difference over
N * (K2 - K1) is the cost of one env step. Measured (mujoco 4.0.0, N = 64; per env step, limit -> shoal):
Reacher 146,683 -> 147,040 (+357, 0.24%), Pusher 292,785 -> 292,902 (+117, 0.04%), Humanoid 2,098,637 ->
2,103,196 (+4,559, of which 4,054 are numpy's idle OpenBLAS threads, not shoal: +505, 0.02%).
"""

from __future__ import annotations

import sys

import numpy as np
from bench_mujoco import limit_function

import shoal.mujoco
from shoal.vector import make

BATCHES, WARMUP = 16, 20  # SHOAL_LIMIT_BATCHES, SHOAL_LIMIT_WARMUP_STEPS of mujoco_limit.c


def limit_actions(low: np.ndarray, high: np.ndarray, num_envs: int) -> np.ndarray:
    """mujoco_limit.c's action batches: low + (high - low) * U from its LCG, in float32."""
    dims = low.shape[0]
    values = np.empty(BATCHES * num_envs * dims, np.float32)
    state, mask = 12345, (1 << 64) - 1
    for k in range(values.size):
        state = (state * 6364136223846793005 + 1442695040888963407) & mask
        lo, hi = np.float32(low[k % dims]), np.float32(high[k % dims])
        values[k] = lo + (hi - lo) * np.float32((state >> 40) * (1.0 / 16777216.0))
    return values.reshape(BATCHES, num_envs, dims)


def main() -> None:
    task, which, num_envs, steps = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    if which == "limit":
        limit_function(task)(num_envs, steps)
        return
    with make(
        shoal.mujoco.env_class(task), backend="Multithreading", num_envs=num_envs, seed=0, max_num_threads=0
    ) as v:
        batches = limit_actions(v.single_action_space.low, v.single_action_space.high, num_envs)
        v.reset(seed=0)
        for t in range(WARMUP + steps):
            v.step(batches[t % BATCHES])


if __name__ == "__main__":
    main()
