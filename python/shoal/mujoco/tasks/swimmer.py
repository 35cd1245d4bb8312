from ..task import Task

TASK = Task(id="Swimmer-v5", symbol="swimmer", gymnasium_module="gymnasium.envs.mujoco.swimmer_v5")
