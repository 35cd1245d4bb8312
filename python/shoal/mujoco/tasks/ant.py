from ..task import Task

TASK = Task(id="Ant-v5", symbol="ant", gymnasium_module="gymnasium.envs.mujoco.ant_v5")
