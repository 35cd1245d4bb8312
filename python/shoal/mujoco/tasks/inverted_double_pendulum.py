from ..task import Task

TASK = Task(
    id="InvertedDoublePendulum-v5",
    symbol="inverted_double_pendulum",
    gymnasium_module="gymnasium.envs.mujoco.inverted_double_pendulum_v5",
)
