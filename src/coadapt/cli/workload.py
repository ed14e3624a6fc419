"""``coadapt workload generate``: make a workload file; ``coadapt workload sets``:
write the named CPU workload sets."""

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


EPILOG = """\
examples:
  coadapt workload generate                          # 160 CPU jobs over 8 h, tuned for 8x2
  coadapt workload generate --num-jobs 30 --window 0.5 --out out/w30.csv
  coadapt workload sets --out out/sets               # the named CPU sets, seed 1
"""


def register(sub: argparse._SubParsersAction) -> None:
    from coadapt.cli.vocab import add_calibration, deprecated
    from coadapt.runs.flags import DEFAULT_CLUSTER, DEFAULT_SEED, count, finite

    wl = sub.add_parser("workload", help="generate workload files",
                        description="Workload files (name,time,application,num_replicas,"
                        "batch_size).", epilog=EPILOG,
                        formatter_class=argparse.RawDescriptionHelpFormatter)
    wsub = wl.add_subparsers(dest="workload_command", required=True,
                             metavar="{generate,sets,philly}")
    g = wsub.add_parser("generate", help="sample a workload", description=DESCRIPTION,
                        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    g.add_argument("--profiles", default="profiles",
                   help="profiles (DIR, cpu:DIR or adaptdl:DIR) giving the job types")
    g.add_argument("--num-jobs", type=count(1, 1_000_000), default=160,
                   help="number of jobs (default 160; at most a million)")
    deprecated(g, "--jobs", "--num-jobs")
    g.add_argument("--seed", type=int, default=DEFAULT_SEED,
                   help=f"random seed (default {DEFAULT_SEED})")
    g.add_argument("--philly", help="path to the Philly trace CSV (philly.csv)")
    g.add_argument("--window", type=finite(0, 87_600, above=True), default=8.0,
                   help="arrival window in hours without --philly (default 8; at most 10 years)")
    g.add_argument("--mix", default="small=0.78,medium=0.15,large=0.05,xlarge=0.02",
                   help="size-class fractions without --philly")
    g.add_argument("--classes", default=None,
                   help="job types per class, e.g. 'small=a,b;medium=c;large=d;xlarge=e' "
                   "(default: the Pollux study's for adaptdl profiles, the CPU sets' for CPU "
                   "profiles)")
    g.add_argument("--cluster", default=DEFAULT_CLUSTER,
                   help=f"cluster the requests are tuned for (default {DEFAULT_CLUSTER})")
    _network_options(g)
    g.add_argument("--out", default="out/workload.csv",
                   help="output CSV path (default out/workload.csv)")
    g.set_defaults(func=run)

    s = wsub.add_parser("sets", help="write the named CPU workload sets",
                        description=SETS_DESCRIPTION, epilog=EPILOG,
                        formatter_class=argparse.RawDescriptionHelpFormatter)
    s.add_argument("--out", default="traces", help="directory for NAME.csv (default traces)")
    s.add_argument("--seed", type=int, default=DEFAULT_SEED,
                   help=f"random seed (default {DEFAULT_SEED})")
    s.add_argument("--cluster", default=DEFAULT_CLUSTER,
                   help=f"cluster the requests are tuned for (default {DEFAULT_CLUSTER})")
    _network_options(s)
    s.add_argument("--profiles", default="profiles",
                   help="CPU profiles giving the job types (default profiles)")
    add_calibration(s, "reference")
    s.set_defaults(func=run_sets)

    ph = wsub.add_parser("philly", help="the Philly trace, whole or in part, as a workload",
                         description=PHILLY_DESCRIPTION, epilog=PHILLY_EPILOG,
                         formatter_class=argparse.RawDescriptionHelpFormatter)
    ph.add_argument("--trace", required=True, metavar="FILE",
                    help="the Philly trace CSV (timestamp,duration,num_gpus,gpu_time,...)")
    ph.add_argument("--profiles", default="profiles",
                    help="profiles giving the job types (DIR, cpu:DIR or adaptdl:DIR)")
    ph.add_argument("--window", default=None, metavar="START:END",
                    help="only jobs arriving between these days since the trace began "
                    "(e.g. 30:37, one week)")
    ph.add_argument("--sample", type=count(1, 10_000_000), default=None, metavar="N",
                    help="N jobs drawn from the selection (default: every one)")
    ph.add_argument("--classes", default=None, help="job types per class, as for generate")
    ph.add_argument("--cluster", default=PHILLY_CLUSTER,
                    help=f"cluster the requests are tuned for (default {PHILLY_CLUSTER}: the "
                    "trace's peak demand, 1,243 GPUs, on 4-slot nodes)")
    _network_options(ph)
    ph.add_argument("--seed", type=int, default=DEFAULT_SEED,
                    help=f"random seed (default {DEFAULT_SEED})")
    ph.add_argument("--out", default="out/philly.csv", help="output CSV (default out/philly.csv)")
    ph.set_defaults(func=run_philly)


PHILLY_CLUSTER = "320x4"
PHILLY_DESCRIPTION = """\
Write the Microsoft Philly trace as a workload: every job (or those arriving
in --window, or --sample of them) at its own arrival time, its job type chosen
by its GPU-time class (small < 1, medium < 10, large < 100 GPU-hours, xlarge
above) as the Pollux generator does, its request a tuned configuration on
--cluster. The whole trace is 82,247 jobs over 109 days; its running jobs held
at most 1,243 GPUs at once, so the default cluster is 320 nodes of 4 slots.
"""
PHILLY_EPILOG = """\
examples:
  coadapt workload philly --trace ../shared/reference/adaptdl/traces/philly.csv \\
      --profiles adaptdl:../shared/reference/adaptdl --out out/philly-all.csv
  coadapt workload philly --trace ../shared/reference/adaptdl/traces/philly.csv --window 30:31 \\
      --out out/philly-day30.csv          # one day, CPU job types
"""

SETS_DESCRIPTION = """\
Write every named CPU workload set (coadapt.workloads.sets) to OUT/NAME.csv:
philly-small's recipe (30 jobs in 30 min, small/medium/large = 60/25/15 %) at
1x-8x its arrival rate (cpu-load1..8), as a 3-min burst (cpu-burst), and at 2x
with user-chosen untuned requests (cpu-user). Tuned requests are priced at the
simulator's truth on --cluster with its network (--bandwidth, --latency).
"""


def _network_options(p: argparse.ArgumentParser) -> None:
    from coadapt.runs.flags import finite

    p.add_argument("--bandwidth", type=finite(0, above=True), default=10.0, metavar="GBIT_S",
                   help="network between nodes the requests are tuned for (default 10)")
    p.add_argument("--latency", type=finite(0), default=50.0, metavar="US",
                   help="per-hop network latency in microseconds (default 50)")


def _pairs(text: str, sep: str) -> dict[str, str]:
    out = {}
    for part in filter(None, (p.strip() for p in text.split(sep))):
        key, eq, value = part.partition("=")
        if not eq:
            raise ValueError(f"expected KEY=VALUE, got {part!r}")
        out[key.strip()] = value.strip()
    return out


def _mix(text: str, classes: tuple[str, ...]) -> dict[str, float]:
    """``--mix``: each class's fraction, finite and >= 0, not all 0."""
    import math

    mix = {}
    for key, value in _pairs(text, ",").items():
        if key not in classes:
            raise ValueError(f"--mix: unknown class {key!r}; use {', '.join(classes)}")
        try:
            mix[key] = float(value)
        except ValueError:
            raise ValueError(f"--mix {key}={value}: expected a number") from None
        if not math.isfinite(mix[key]) or mix[key] < 0:
            raise ValueError(f"--mix {key}={value}: expected a finite fraction >= 0")
    if not sum(mix.values()) > 0:
        raise ValueError(f"--mix {text!r}: the fractions sum to 0; give one class a share")
    return mix


def _default_classes(types: set[str]) -> dict[str, tuple[str, ...]]:
    """The job types per size class of the profiles given: the Pollux study's
    for its GPU profiles, the CPU sets' for the CPU job types."""
    from coadapt.workloads.generate import ADAPTDL_CLASSES
    from coadapt.workloads.sets import CPU_CLASSES

    for classes in (ADAPTDL_CLASSES, CPU_CLASSES):
        if any(t in types for apps in classes.values() for t in apps):
            return dict(classes)
    raise ValueError(f"--classes: no default for job types {', '.join(sorted(types))}; give "
                     "one, e.g. --classes 'small=a;medium=b;large=c;xlarge=d'")


def run(args: argparse.Namespace) -> int:
    import numpy as np

    from coadapt.workloads.generate import (
        CLASSES,
        generate,
        parametric_arrivals,
        philly_arrivals,
        write_workload,
    )
    from coadapt.world.cluster import ClusterSpec, Network
    from coadapt.world.profiles.profile import ProfileError
    from coadapt.world.profiles.sources import load_profiles
    from coadapt.world.world import World

    try:
        if Path(args.out).is_dir():
            raise ValueError(f"--out {args.out}: is a folder; give the CSV file to write, e.g. "
                             f"{Path(args.out) / 'workload.csv'}")
        cluster = ClusterSpec.parse(args.cluster, Network(args.bandwidth, args.latency))
        world = World.build(load_profiles(args.profiles), cluster)
        classes = ({k: tuple(v.split(",")) for k, v in _pairs(args.classes, ";").items()}
                   if args.classes else _default_classes(set(world.profiles)))
        rng = np.random.default_rng(args.seed)
        if args.philly:
            arrivals = philly_arrivals(Path(args.philly))
        else:
            mix = _mix(args.mix, CLASSES)
            arrivals = parametric_arrivals(args.num_jobs, args.window * 3600, mix, rng)
        rows = generate(arrivals, args.num_jobs, world, classes, rng)
    except (ValueError, ProfileError, OSError, KeyError) as exc:
        sys.stderr.write(f"coadapt workload generate: error: {exc}\n")
        return 2
    try:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        write_workload(Path(args.out), rows)
    except OSError as exc:
        sys.stderr.write(f"coadapt workload generate: error: --out {args.out}: {exc.strerror}\n")
        return 2
    sys.stdout.write(f"wrote {len(rows)} jobs to {args.out}\n")
    return 0


def run_sets(args: argparse.Namespace) -> int:
    from coadapt.workloads.generate import write_workload
    from coadapt.workloads.sets import SETS, make_workload
    from coadapt.world.cluster import ClusterSpec, Network
    from coadapt.world.costs import resolve_costs
    from coadapt.world.profiles.profile import ProfileError
    from coadapt.world.profiles.sources import load_profiles
    from coadapt.world.world import World

    try:
        cluster = ClusterSpec.parse(args.cluster, Network(args.bandwidth, args.latency))
        world = World.build(load_profiles(args.profiles), cluster,
                            costs=resolve_costs(args.calibration, args.profiles))
        made = [(ws, make_workload(ws, args.seed, world)) for ws in SETS.values()]
    except (ValueError, ProfileError, OSError, KeyError) as exc:
        sys.stderr.write(f"coadapt workload sets: error: {exc}\n")
        return 2
    out = Path(args.out)
    lines = [f"{'set':<12} {'jobs':>5} {'window':>7} {'load':>5} {'workers':>7}  requests",
             f"{'':<12} {'':>5} {'(min)':>7} {'(x)':>5} {'(mean)':>7}"]
    for ws, wl in made:
        write_workload(out / f"{ws.name}.csv", [(j.name, j.submit_time, j.application,
                                                 j.num_replicas, j.batch_size) for j in wl.jobs],
                       [j.weight for j in wl.jobs])
        workers = sum(j.num_replicas for j in wl.jobs) / len(wl.jobs)
        lines.append(f"{ws.name:<12} {len(wl.jobs):>5} {ws.window_s / 60:>7.0f} {ws.load:>5.1f} "
                     f"{workers:>7.2f}  {'user-chosen' if ws.user_chosen else 'tuned'}")
    sys.stdout.write("\n".join(lines) + f"\nwrote {len(made)} sets to {out}/ (seed {args.seed}, "
                     f"cluster {cluster}, {cluster.network})\n")
    return 0


def run_philly(args: argparse.Namespace) -> int:
    import numpy as np

    from coadapt.workloads.generate import write_workload
    from coadapt.workloads.philly import peak_demand, read_trace, select, to_rows
    from coadapt.world.cluster import ClusterSpec, Network
    from coadapt.world.profiles.profile import ProfileError
    from coadapt.world.profiles.sources import load_profiles
    from coadapt.world.world import World

    try:
        if Path(args.out).is_dir():
            raise ValueError(f"--out {args.out}: is a folder; give the CSV file to write")
        window = _window(args.window)
        cluster = ClusterSpec.parse(args.cluster, Network(args.bandwidth, args.latency))
        world = World.build(load_profiles(args.profiles), cluster)
        classes = ({k: tuple(v.split(",")) for k, v in _pairs(args.classes, ";").items()}
                   if args.classes else _default_classes(set(world.profiles)))
        rng = np.random.default_rng(args.seed)
        jobs = select(read_trace(Path(args.trace)), window, args.sample, rng)
        rows = to_rows(jobs, world, classes, rng)
    except (ValueError, ProfileError, OSError, KeyError) as exc:
        sys.stderr.write(f"coadapt workload philly: error: {exc}\n")
        return 2
    write_workload(Path(args.out), rows)
    span = jobs[-1].arrival / 86400
    sys.stdout.write(f"wrote {len(rows)} jobs over {span:.1f} days to {args.out} (the trace's "
                     f"peak demand in this selection: {peak_demand(jobs)} GPUs; cluster "
                     f"{cluster}, {cluster.total_slots} slots)\n")
    return 0


def _window(text: str | None) -> tuple[float, float] | None:
    """``--window START:END`` in days, finite, START < END."""
    import math

    if text is None:
        return None
    lo, sep, hi = text.partition(":")
    try:
        a, b = float(lo), float(hi)
    except ValueError:
        raise ValueError(f"--window {text!r}: expected START:END in days, e.g. 30:37") from None
    if not sep or not (math.isfinite(a) and math.isfinite(b)) or a < 0 or b <= a:
        raise ValueError(f"--window {text!r}: expected START:END days with 0 <= START < END")
    return a, b
