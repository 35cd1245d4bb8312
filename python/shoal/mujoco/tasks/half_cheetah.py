from ..task import Task

TASK = Task(id="HalfCheetah-v5", symbol="half_cheetah", gymnasium_module="gymnasium.envs.mujoco.half_cheetah_v5")
