"""One rank of ``coadapt netbench`` (``python -m coadapt.tools.netbench.worker``).

Started in its emulated node's namespace with the rendezvous in the standard
env vars and its plan as JSON in ``COADAPT_NETBENCH``: for each size, a few
warm-up all-reduces, then timed ones, each after a barrier so every rank
starts together. Rank 0 writes the per-size wall times (max over ranks) and
the CPU seconds all ranks spent, so the caller can tell a network-bound point
from a CPU-bound one.
"""

from __future__ import annotations

import json
import os
import sys
import time
from datetime import timedelta
from pathlib import Path

PLAN_ENV = "COADAPT_NETBENCH"


def main() -> None:
    plan = json.loads(os.environ[PLAN_ENV])
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    from coadapt.jobs.procs import start_parent_watchdog

    start_parent_watchdog(int(plan["parent_pid"]))
    import torch
    import torch.distributed as dist

    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=world,
                            timeout=timedelta(seconds=float(plan["timeout_s"])))
    rows = []
    for label, nbytes in plan["sizes"]:
        buf = torch.ones(max(int(nbytes) // 4, 1), dtype=torch.float32)
        for _ in range(int(plan["warmup"])):
            dist.all_reduce(buf)
        walls = []
        cpu0, t0 = time.process_time(), time.perf_counter()
        for _ in range(int(plan["reps"])):
            dist.barrier()
            t = time.perf_counter()
            dist.all_reduce(buf)
            walls.append(time.perf_counter() - t)
        span, cpu = time.perf_counter() - t0, time.process_time() - cpu0
        stats = torch.tensor([*walls, span, cpu], dtype=torch.float64)
        worst = stats.clone()
        dist.all_reduce(worst, op=dist.ReduceOp.MAX)  # a collective ends when its last rank does
        dist.all_reduce(stats)  # the sum: CPU seconds of all ranks
        rows.append({"size": label, "bytes": int(nbytes), "walls": worst[:-2].tolist(),
                     "span_s": float(worst[-2]), "cpu_s": float(stats[-1])})
    if rank == 0:
        out = Path(plan["out"])
        tmp = out.with_suffix(".tmp")
        tmp.write_text(json.dumps({"k": world, "rows": rows}))
        os.replace(tmp, out)
    dist.destroy_process_group()
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
