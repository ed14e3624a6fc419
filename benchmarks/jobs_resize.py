"""Resize demo: 1 worker at M0 -> 2 workers at 4 x M0 -> 1 worker at M0, to target.

    python benchmarks/jobs_resize.py [--type cnn-mnist1d] [--phase-seconds 15]

Each resize is a graceful stop (the SIGTERM path: checkpoint at the next step,
exit 0) and a resumed launch with the new size. Prints, per resize, the restart
cost = time from the stop request to the end of the first step of the new
launch, and checks that progress and samples continue exactly.
"""

from __future__ import annotations

import argparse
import logging
import sys
import tempfile
import threading
import time
from pathlib import Path

from coadapt.eventlog import read_events
from coadapt.jobs.checkpoint import JOB_FILE, read_json
from coadapt.jobs.group import Group, RunConfig
from coadapt.jobs.registry import JOB_TYPES


def main() -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--type", default="cnn-mnist1d")
    ap.add_argument("--phase-seconds", type=float, default=15.0)
    args = ap.parse_args()
    job = JOB_TYPES[args.type]
    ckpt = Path(tempfile.mkdtemp(prefix="resize-"))
    ev = ckpt / "events.jsonl"
    m0 = job.limits.init_batch_size
    phases = [(1, m0, args.phase_seconds), (2, 4 * m0, args.phase_seconds), (1, m0, None)]
    stops: list[float] = []
    for i, (workers, batch, seconds) in enumerate(phases):
        group = Group(RunConfig(args.type, workers, batch, ckpt, resume=i > 0, events=ev))
        group.start()
        if seconds is not None:
            def stop_later(g: Group = group, s: float = seconds) -> None:
                time.sleep(s)
                first = float(read_json(ckpt / JOB_FILE)["first_start_wall"])
                stops.append(time.time() - first)
                g.request_stop()

            threading.Thread(target=stop_later, daemon=True).start()
        res = group.wait()
        logging.info("phase %d (K=%d, M=%d): %s", i + 1, workers, batch, res)
        if res.status == "complete":
            break
    events = list(read_events(ev))
    obs = [e for e in events if e["kind"] == "observation"]
    launches = [e for e in events if e["kind"] in ("start", "restart")]
    out = sys.stdout
    out.write(f"job {args.type}: {len(launches)} launches, events in {ev}\n")
    for k, t_stop in enumerate(stops):
        last_old = max((e for e in obs if e["t"] <= t_stop + 60 and e["t"] < launches[k + 1]["t"]),
                       key=lambda e: e["step"])
        first_new = min((e for e in obs if e["t"] > launches[k + 1]["t"]), key=lambda e: e["step"])
        cont = abs(first_new["progress"] - (last_old["progress"] + first_new["gain"])) < 1e-6
        out.write(
            f"resize {k + 1}: K {last_old['workers']}->{first_new['workers']}, "
            f"M {last_old['batch_size']}->{first_new['batch_size']}: stop at t={t_stop:.2f}, "
            f"last old step {last_old['step']} t={last_old['t']:.2f}, relaunch "
            f"t={launches[k + 1]['t']:.2f}, first new step {first_new['step']} "
            f"t={first_new['t']:.2f}; restart cost {first_new['t'] - t_stop:.2f} s; "
            f"progress {last_old['progress']:.2f} -> {first_new['progress']:.2f} "
            f"({'continuous' if cont else 'DISCONTINUOUS'}), samples "
            f"{last_old['samples']} -> {first_new['samples']}\n")
    done = [e for e in events if e["kind"] == "complete"]
    if done:
        d = done[-1]
        out.write(f"complete at t={d['t']:.1f}: metric {d['metric']:.4f} verified={d['verified']} "
                  f"progress {d['progress']:.1f} samples {d['samples']}\n")
    return 0 if done and done[-1]["verified"] else 1


if __name__ == "__main__":
    sys.exit(main())
