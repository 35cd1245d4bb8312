from ..task import Task

TASK = Task(
    id="InvertedPendulum-v5", symbol="inverted_pendulum", gymnasium_module="gymnasium.envs.mujoco.inverted_pendulum_v5"
)
