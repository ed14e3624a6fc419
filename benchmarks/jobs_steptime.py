"""Step time of every job type at 1 and 2 workers (wall, sync and CPU seconds).

    python benchmarks/jobs_steptime.py [--steps 40] [--types T ...]

Configurations: (K=1, M=M0), (K=2, M=2*M0) -- the same per-worker micro-batch --
and (K=2, M=M0). Medians over the steps after the first 5 of each launch.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from jobs_common import launch, summarise  # noqa: E402

from coadapt.jobs.registry import JOB_TYPES  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--types", nargs="*", default=list(JOB_TYPES))
    ap.add_argument("--steps", type=int, default=40)
    args = ap.parse_args()
    sys.stdout.write(f"{'type':18} {'K':>2} {'M':>5} {'m':>4} {'step ms':>8} {'sync ms':>8} "
                     f"{'cpu ms':>7} {'samples/s':>9}\n")
    for name in args.types:
        job = JOB_TYPES[name]
        m0 = job.limits.init_batch_size
        for workers, batch in ((1, m0), (2, 2 * m0), (2, m0)):
            never = 2.0 if job.higher_is_better else -1.0
            _, events, _ = launch(name, workers, batch, max_steps=args.steps, eval_every=1e9,
                                  target=never)
            s = summarise(events, m0)
            sys.stdout.write(f"{name:18} {workers:2d} {batch:5d} {batch // workers:4d} "
                             f"{1e3 * s['step_time']:8.2f} {1e3 * s['sync_time']:8.2f} "
                             f"{1e3 * s['cpu_time']:7.2f} {batch / s['step_time']:9.0f}\n")
            sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
