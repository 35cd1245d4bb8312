"""What runs where the envs are: in a Multiprocessing worker process, in a Ray actor, and (the slice
runner) in Serial's own loop.

    slices          a worker's share of make()'s creators, args and kwargs, and its pickling
    runner          the one loop that builds, resets and steps a slice of envs
    process_worker  a Multiprocessing worker: its shared block's layout and its command loop
    ray_actor       a Ray actor hosting a slice of envs
"""
