from ..task import Task

TASK = Task(id="Reacher-v5", symbol="reacher", gymnasium_module="gymnasium.envs.mujoco.reacher_v5")
