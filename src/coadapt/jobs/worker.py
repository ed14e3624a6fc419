"""Entry point of one worker process (``python -m coadapt.jobs.worker``).

Started by ``coadapt.jobs.launch`` (for a ``coadapt.jobs.group``) with the
rendezvous in the standard env vars (MASTER_ADDR, MASTER_PORT, WORLD_SIZE, RANK)
and its spec as JSON in COADAPT_WORKER_SPEC. SIGTERM only sets a flag: the flag
is OR-ed over ranks in the per-step statistics all-reduce, so every rank stops
after the same step, rank 0 checkpoints and all exit 0. A batch-size request
(``control.json``, read by rank 0) travels in the same all-reduce, so every rank
re-plans its batch after the same step (``coadapt.jobs.loop``).
"""

from __future__ import annotations

import signal
import threading

_STOP = threading.Event()


def _on_term(signum: int, frame: object) -> None:
    _STOP.set()


if __name__ == "__main__":
    # Installed before the heavy imports; the parent blocked SIGTERM across exec, so
    # a stop request sent during start-up is pending until here instead of killing us.
    signal.signal(signal.SIGTERM, _on_term)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})

import logging  # noqa: E402
import os  # noqa: E402
import sys  # noqa: E402
from datetime import timedelta  # noqa: E402
from typing import NoReturn  # noqa: E402

from coadapt.jobs.spec import SPEC_ENV, WorkerSpec  # noqa: E402

log = logging.getLogger("coadapt.jobs.worker")


def main() -> NoReturn:
    spec = WorkerSpec.from_json(os.environ[SPEC_ENV])
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                        format=f"%(asctime)s rank{rank} %(levelname)s %(message)s")
    from coadapt.jobs.procs import start_parent_watchdog

    start_parent_watchdog(spec.parent_pid)

    import torch
    import torch.distributed as dist

    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=world,
                            timeout=timedelta(seconds=spec.timeout_s))
    cpus = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
    log.info("rendezvous done (%d ranks, launch %d, gloo timeout %g s, cpus %s)", world,
             spec.launch, spec.timeout_s, cpus)
    try:
        from coadapt.jobs.loop import TrainLoop

        status = TrainLoop(spec, rank, world, _STOP).run()
        log.info("finished: %s", status)
        dist.destroy_process_group()
        code = 0
    except Exception:
        log.exception("worker failed")
        code = 1
    # Everything that matters is on disk (checkpoint and events are fsynced or
    # flushed); skip the interpreter's slow teardown of torch so a resize is quicker.
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    main()
