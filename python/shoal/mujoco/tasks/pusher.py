from ..task import Task

TASK = Task(id="Pusher-v5", symbol="pusher", gymnasium_module="gymnasium.envs.mujoco.pusher_v5")
