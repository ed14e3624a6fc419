"""Calibrate the job types: time and samples to target at M0, 4xM0, 16xM0, and the
gradient noise scale along training.

    python benchmarks/jobs_calibrate.py [--types T ...] [--mults 1 4 16] [--parallel 2]

Each (type, multiple) is one real run to the type's target on ``--workers``
worker(s) (batch > max_local_bsz uses gradient accumulation). Runs go
``--parallel`` at a time; wall times are only meaningful with --parallel 1 on an
otherwise idle machine, samples-to-target do not depend on it.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from jobs_common import launch, summarise  # noqa: E402

from coadapt.jobs.registry import JOB_TYPES  # noqa: E402


def one(name: str, mult: int, workers: int, timeout: float) -> dict[str, Any]:
    job = JOB_TYPES[name]
    res, events, ckpt = launch(name, workers, job.limits.init_batch_size * mult, timeout=timeout)
    s = summarise(events, job.limits.init_batch_size)
    start = next(e for e in events if e["kind"] == "start")
    done = s.pop("complete")
    row = {"type": name, "mult": mult, "batch": job.limits.init_batch_size * mult, "workers": workers,
           "status": res.status, "verified": res.verified,
           "time_to_target": (done["t"] - start["t"]) if done else None, **s, "ckpt": str(ckpt)}
    logging.info("%s", json.dumps(row))
    return row


def main() -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--types", nargs="*", default=list(JOB_TYPES))
    ap.add_argument("--mults", nargs="*", type=int, default=[1, 4, 16])
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--parallel", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=3600.0)
    ap.add_argument("--out", type=Path, default=None, help="write all rows as JSON")
    args = ap.parse_args()
    todo = [(t, m) for t in args.types for m in args.mults]
    with ThreadPoolExecutor(args.parallel) as pool:
        rows = list(pool.map(lambda tm: one(tm[0], tm[1], args.workers, args.timeout), todo))
    if args.out:
        args.out.write_text(json.dumps(rows, indent=1))
    sys.stdout.write(f"{'type':18} {'M':>5} {'status':9} {'to target s':>11} {'steps':>6} "
                     f"{'samples':>8} {'step ms':>8} {'cpu ms':>7}  phi start/mid/end\n")
    for r in rows:
        ttt = f"{r['time_to_target']:.1f}" if r["time_to_target"] is not None else "-"
        phi = "/".join(f"{p:.0f}" for p in r["phi"])
        sys.stdout.write(f"{r['type']:18} {r['batch']:5d} {r['status']:9} {ttt:>11} "
                         f"{r['steps']:6d} {r['samples']:8d} {1e3 * r['step_time']:8.1f} "
                         f"{1e3 * r['cpu_time']:7.1f}  {phi}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
