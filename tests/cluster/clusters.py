"""The clusters the distributed tests start: two CPU workers, or one GPU worker (the CuPy
stand-in of ``tests/cupy_standin``) and one CPU worker; each worker a process with 1 thread,
the dptx preloads on workers and scheduler."""
import logging

from distributed import LocalCluster, Nanny, Scheduler, SpecCluster

STANDIN_ENV = {"DPTX_CUPY_MODULE": "tests.cupy_standin", "DPTX_STANDIN_DEVICES": "1"}
CPU_ENV = {"DPTX_DISABLE_GPU": "1"}


def cpu_cluster(n_workers: int = 2, silence_logs: int = logging.ERROR, **options):
    """``options``: more of LocalCluster's (``memory_limit="300MB"``)."""
    return LocalCluster(n_workers=n_workers, threads_per_worker=1, processes=True,
                        dashboard_address=":0", silence_logs=silence_logs,
                        preload=["dptx.worker"], scheduler_kwargs={"preload": ["scheduler_plugins"]},
                        **options)


def mixed_cluster(gpu_env: dict = None):
    """Workers named "gpu" and "cpu"; ``gpu_env`` adds to the stand-in's environment."""
    def worker(env):
        return {"cls": Nanny, "options": {"nthreads": 1, "preload": ["dptx.worker"], "env": env,
                                          "silence_logs": logging.ERROR}}
    scheduler = {"cls": Scheduler, "options": {"dashboard_address": ":0",
                                               "preload": ["scheduler_plugins"]}}
    return SpecCluster(workers={"gpu": worker(dict(STANDIN_ENV, **(gpu_env or {}))),
                                "cpu": worker(CPU_ENV)},
                       scheduler=scheduler, silence_logs=logging.ERROR)
