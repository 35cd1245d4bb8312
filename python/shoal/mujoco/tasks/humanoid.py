from ..task import Task

TASK = Task(id="Humanoid-v5", symbol="humanoid", gymnasium_module="gymnasium.envs.mujoco.humanoid_v5")
