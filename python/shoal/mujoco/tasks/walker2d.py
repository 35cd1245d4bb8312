from ..task import Task

TASK = Task(id="Walker2d-v5", symbol="walker2d", gymnasium_module="gymnasium.envs.mujoco.walker2d_v5")
