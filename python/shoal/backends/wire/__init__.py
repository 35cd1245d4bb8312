"""What crosses between a worker and its caller, in forms both sides read the same way.

messages     what a worker reports: failures naming the env and the worker
blocks       cache-line-aligned arrays carved out of one byte block, by both sides alike
info_tables  infos packed into tables for the trip from a worker process
"""
