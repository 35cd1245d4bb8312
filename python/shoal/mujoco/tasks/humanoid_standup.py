from ..task import Task

TASK = Task(
    id="HumanoidStandup-v5", symbol="humanoid_standup", gymnasium_module="gymnasium.envs.mujoco.humanoidstandup_v5"
)
