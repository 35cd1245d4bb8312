"""The machinery of backends whose envs run in workers (Multiprocessing processes, Ray actors), and
the slice runner that Serial shares with them.

    layout    how envs split over workers and batches; where each worker's envs start
    batching  which completed workers form the next batch (PufferLib's batching modes)
    blocks    cache-line-aligned arrays carved out of one byte block
    slices    a worker's share of make()'s creators, args and kwargs, and its pickling
    messages  what a worker reports: failures naming the env and the worker
    runner    the one loop that builds, resets and steps a slice of envs
    caller    the caller side: layout, driver env, batch views, recv prologue, failure path
    faults    limits of creating and closing a worker; what a dead, late or stuck worker's error says
    ownership only the creating process drives the workers (fork epoch)
    process_pool   Multiprocessing's processes, pipes, semaphores and shared memory, and their teardown
    ray_session    the Ray connection shared by a process's vectors, and each vector's actors
"""
