"""``coadapt workload generate``: make a workload file."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

DESCRIPTION = """\
Generate a workload CSV the way the Pollux study did: arrivals over a daytime
window, a job type per size class (by GPU-time: small < 1 h, medium < 10 h,
large < 100 h, xlarge), and a hand-tuned (replicas, batch) request drawn from the
configurations with JCT < 12 h and scaling efficiency in (0.5, 0.8) on the
cluster. With --philly the arrivals and classes are sampled from the Philly
trace; without it, from a seeded parametric model (--window, --mix).
"""


def register(sub: argparse._SubParsersAction) -> None:
    wl = sub.add_parser("workload", help="generate workload files",
                        description="Workload files (name,time,application,num_replicas,"
                        "batch_size).")
    wsub = wl.add_subparsers(dest="workload_command", required=True, metavar="{generate}")
    g = wsub.add_parser("generate", help="sample a workload", description=DESCRIPTION,
                        formatter_class=argparse.RawDescriptionHelpFormatter)
    g.add_argument("--profiles", default="profiles",
                   help="profiles (DIR, cpu:DIR or adaptdl:DIR) giving the job types")
    g.add_argument("--jobs", type=int, default=160, help="number of jobs (default 160)")
    g.add_argument("--seed", type=int, default=1)
    g.add_argument("--philly", help="path to the Philly trace CSV (philly.csv)")
    g.add_argument("--window", type=float, default=8.0,
                   help="arrival window in hours without --philly (default 8)")
    g.add_argument("--mix", default="small=0.78,medium=0.15,large=0.05,xlarge=0.02",
                   help="size-class fractions without --philly")
    g.add_argument("--classes", default=None,
                   help="job types per class, e.g. 'small=a,b;medium=c;large=d;xlarge=e' "
                   "(default: the Pollux study's for adaptdl profiles)")
    g.add_argument("--cluster", default="16x4", help="cluster the requests are tuned for")
    g.add_argument("--out", required=True, help="output CSV path")
    g.set_defaults(func=run)


def _pairs(text: str, sep: str) -> dict[str, str]:
    out = {}
    for part in filter(None, (p.strip() for p in text.split(sep))):
        key, eq, value = part.partition("=")
        if not eq:
            raise ValueError(f"expected KEY=VALUE, got {part!r}")
        out[key.strip()] = value.strip()
    return out


def run(args: argparse.Namespace) -> int:
    import numpy as np

    from coadapt.engine.cluster import ClusterSpec
    from coadapt.engine.limits import declared_limits
    from coadapt.profiling.profile import ProfileError
    from coadapt.profiling.sources import load_profiles
    from coadapt.workloads.generate import (
        ADAPTDL_CLASSES,
        CLASSES,
        generate,
        parametric_arrivals,
        philly_arrivals,
        write_workload,
    )

    try:
        cluster = ClusterSpec.parse(args.cluster)
        profiles = load_profiles(args.profiles)
        classes = ({k: tuple(v.split(",")) for k, v in _pairs(args.classes, ";").items()}
                   if args.classes else ADAPTDL_CLASSES)
        rng = np.random.default_rng(args.seed)
        if args.philly:
            arrivals = philly_arrivals(Path(args.philly))
        else:
            mix = {k: float(v) for k, v in _pairs(args.mix, ",").items()}
            bad = set(mix) - set(CLASSES)
            if bad:
                raise ValueError(f"--mix: unknown class {', '.join(bad)}; use {CLASSES}")
            arrivals = parametric_arrivals(args.jobs, args.window * 3600, mix, rng)
        rows = generate(arrivals, args.jobs, profiles, declared_limits(profiles, profiles),
                        classes, max(cluster.slots_per_node), cluster.total_slots, rng)
    except (ValueError, ProfileError, OSError, KeyError) as exc:
        sys.stderr.write(f"coadapt workload generate: error: {exc}\n")
        return 2
    write_workload(Path(args.out), rows)
    sys.stdout.write(f"wrote {len(rows)} jobs to {args.out}\n")
    return 0
