from ..task import Task

TASK = Task(id="Hopper-v5", symbol="hopper", gymnasium_module="gymnasium.envs.mujoco.hopper_v5")
