"""The caller's side of backends whose envs run in workers (Multiprocessing processes, Ray actors):
everything that runs in the process that called make().

    worker_backend what both backends share: the split, the driver env, batch views, reset,
                   the recv prologue, worker failures and restarts
    env_split      how envs split over workers and batches
    batching       which completed workers form the next batch (PufferLib's batching modes)
    deadlines      the ``timeout`` of in-flight workers, and the on_worker_failure policies
    restart        what a replaced worker's rows and infos say
    faults         limits of creating and closing a worker; what a dead, late or stuck worker's error says
    ownership      only the creating process drives the workers (fork epoch)
    process_pool   Multiprocessing's processes, pipes, semaphores and shared memory, and their teardown
    ray_session    the Ray connection shared by a process's vectors, and each vector's actors
"""
