"""``coadapt calibrate``: measure what live jobs pay besides their profiled steps."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from coadapt.cli.errors import fail

if TYPE_CHECKING:
    from coadapt.world.cluster import ClusterSpec

CALIBRATE_HELP = """\
Measure what a live job pays besides its steady training steps, per job type,
with real worker groups pinned to cores: first start, restart (stop, checkpoint,
relaunch, resume), each validation with its checkpoint, the fresh-process
verification, and the step-time slowdown next to another job on the same node.
Writes OUT (default PROFILES/live-costs.json), which 'coadapt simulate' and the
comparison after 'coadapt live' charge instead of one fixed restart delay.
Takes about 6 minutes for the four job types on an idle 2-core machine.

--quick (what 'coadapt live' runs first; about 2-3 minutes): per type the steady
step at 1 and 2 workers and 2 micro-batch sizes, a start, two restarts, a
verification; per type a compute and a sync factor against the shipped profiles
(the simulator applies them to the whole grid) with their spread; no co-location
pairs. Writes out/calibrations/<machine id>.json unless --out. Every calibration
records this machine's fingerprint (CPU model and flags, cores, kernel, torch).
'coadapt simulate' and 'coadapt experiment' charge the shipped calibration of the
named reference machine (profiles/live-costs.json) unless told '--calibration
this' (this machine's newest here) or a file; every table names the one it used.
After measuring, the changes against this machine's previous calibration (or the
reference) are printed per job type and quantity: old -> new and their ratio.

--quick --cluster 1x1:native,1x1:legacy (any kinds; --kinds FILE adds your own):
per job type and per node kind the cluster uses, plus native as the reference,
the steady step on workers emulating the kind (its instruction-set limits and
a cgroup with its CPU quota): 1 worker at M0 and 4 M0, 2 workers at M0. Writes
the compute and sync factors against the shipped profiles, with their spread,
to out/calibrations/<machine id>-kinds.json unless --out (about 3-4 minutes
for three kinds on 2 cores); the machine calibration is the one without
--cluster. A cluster of plain nodes only (no kind, or native) changes nothing.
"""

CALIBRATE_EXAMPLES = """\
examples (from the project root):
  coadapt calibrate --quick                        # this machine, about 3 minutes
  coadapt simulate --calibration this              # then simulate with it
  coadapt calibrate --quick --types mlp-mnist1d    # one job type only
  coadapt calibrate --quick --cluster 1x1:native,1x1:legacy   # node kinds
  coadapt calibrate --out out/full-costs.json      # the full one, with co-location (~6 min)
"""


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("calibrate", help="measure live start/restart/validation/verify costs",
                       description=CALIBRATE_HELP, epilog=CALIBRATE_EXAMPLES,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--profiles", default="profiles",
                   help="profiles folder (step times pace the validations; default profiles)")
    p.add_argument("--types", default=None,
                   help="comma list of job types (default: all in the job registry)")
    p.add_argument("--out", default=None, help="output file (default PROFILES/live-costs.json; "
                   "with --quick out/calibrations/<machine id>.json)")
    p.add_argument("--quick", action="store_true",
                   help="the short calibration 'coadapt live' runs first (about 3 minutes)")
    p.add_argument("--phase", type=float, default=6.0,
                   help="seconds of training per phase (default 6)")
    p.add_argument("--pair", type=float, default=10.0,
                   help="seconds side by side per pair of job types (default 10)")
    p.add_argument("--cluster", default=None,
                   help="with --quick: measure the node kinds this cluster uses, e.g. "
                   "1x1:native,1x1:legacy (writes <machine id>-kinds.json)")
    p.add_argument("--kinds", default=None, metavar="FILE",
                   help="TOML file of more node kinds ([kind.NAME] tables, as "
                   "coadapt/world/kinds.toml)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import itertools
    import socket
    import time

    from coadapt.backends.live.cores import usable_cores
    from coadapt.jobs.registry import JOB_TYPES
    from coadapt.tools.measure.calibrate import (
        CalibrationSettings,
        calibrate,
        quick_calibration,
        quick_phases,
    )
    from coadapt.ui.progress import ProgressBar
    from coadapt.util.outdir import check_out_file
    from coadapt.world.costs import (
        CALIBRATIONS_DIR,
        COSTS_FILE,
        machine_fingerprint,
        previous_calibration,
    )

    if args.out:
        try:
            check_out_file(Path(args.out))
        except ValueError as exc:
            return fail("calibrate", str(exc))
    from coadapt.world.profiles.profile import ProfileError
    from coadapt.world.profiles.sources import load_profiles

    apps = sorted(JOB_TYPES) if args.types is None else args.types.split(",")
    unknown = [a for a in apps if a not in JOB_TYPES]
    if unknown:
        return fail("calibrate", f"--types: unknown job type {', '.join(unknown)}; "
                    f"known: {', '.join(sorted(JOB_TYPES))}")
    if args.phase <= 0 or args.pair <= 0:
        return fail("calibrate", "--phase and --pair must be > 0 seconds")
    cores = usable_cores()
    if len(cores) < 2:
        return fail("calibrate", f"calibration needs 2 cores (1 and 2 workers, pairs); this "
                    f"machine has {len(cores)} usable")
    steps = {}
    try:
        profiles = load_profiles(args.profiles) if Path(args.profiles).exists() else {}
    except ProfileError as exc:
        return fail("calibrate", str(exc))
    for app in apps:
        if app in profiles:
            p = profiles[app]
            steps[app] = p.throughput((1,), p.limits.init_batch_size)[0]
    t0 = time.monotonic()
    if args.cluster is not None:
        from coadapt.tools.measure.kinds import needs_kinds
        from coadapt.world.cluster import ClusterSpec

        try:
            cluster = ClusterSpec.parse(args.cluster)
        except ValueError as exc:
            return fail("calibrate", str(exc))
        if needs_kinds(cluster):
            if not args.quick:
                return fail("calibrate", "--cluster: node kinds are measured by --quick "
                            "(add --quick)")
            return _kinds(args, apps, cluster, profiles, (cores[0], cores[1]), t0)
    before = previous_calibration(args.profiles)  # read now: the new one may overwrite it
    if args.quick:
        out = (Path(args.out) if args.out
               else CALIBRATIONS_DIR / f"{machine_fingerprint()['id']}.json")
        bar = ProgressBar(total=quick_phases(apps), label="calibrate --quick", unit="phases")
        costs = quick_calibration(apps, out, profiles, tick=lambda note: bar.advance(1, note))
    else:
        s = CalibrationSettings(phase_s=args.phase, pair_s=args.pair,
                                cores=(cores[0], cores[1]))
        out = Path(args.out) if args.out else Path(args.profiles) / COSTS_FILE
        pairs = sum(1 if a == b else 2
                    for a, b in itertools.combinations_with_replacement(apps, 2))
        bar = ProgressBar(total=len(apps) * (len(s.cycle) + 2) + 2 * len(apps) + pairs,
                          label="calibrate", unit="phases")
        costs = calibrate(apps, out, s, steps, tick=lambda note: bar.advance(1, note),
                          profiles=profiles)
    bar.close()
    for app, c in sorted(costs.types.items()):
        spread = "" if c.compute_spread is None else f" +-{c.compute_spread:.1%}"
        sys.stdout.write(f"{app:18s} compute x{c.compute_factor:.3f}{spread}  "
                         f"sync x{c.sync_factor:.3f}\n")
    for app, c in sorted(costs.types.items()):
        sys.stdout.write(
            f"{app:18s} start {_fmt(c.start)}  restart {_fmt(c.restart)}  eval {_fmt(c.eval)}  "
            f"verify {c.verify:.2f} s  colocation "
            + ", ".join(f"{k}: {v:.3f}" for k, v in sorted(c.colocation.items())) + "\n")
    sys.stdout.write(f"wrote {out} in {time.monotonic() - t0:.0f} s ({socket.gethostname()}, "
                     f"{machine_fingerprint()['cpu_model']})\n")
    sys.stdout.write(changes_report(before, out) + "\n")
    return 0


def changes_report(before: tuple[str, dict] | None, out: Path) -> str:
    """What the calibration just written to ``out`` changed against ``before``
    ((label, JSON document) of the previous one), and how to use it."""
    import json

    from coadapt.world.calibration import calibration_changes, format_changes
    from coadapt.world.costs import CALIBRATIONS_DIR

    lines = []
    if before is not None:
        lines.append(format_changes(calibration_changes(before[1], json.loads(out.read_text())),
                                    before[0]))
    mine = out.resolve().parent == CALIBRATIONS_DIR.resolve()
    lines.append(f"use it with --calibration {'this' if mine else out}")
    return "\n".join(lines)


def _kinds(args: argparse.Namespace, apps: list[str], cluster: ClusterSpec, profiles: dict,
           cores: tuple[int, int], t0: float) -> int:
    """The per-kind calibration of ``cluster``'s kinds (see CALIBRATE_HELP)."""
    import logging
    import time

    from coadapt.backends.live.kinds import (
        CgroupUnavailable,
        cleanup_leftovers,
        quota_kinds,
        require_cpu_controller,
    )
    from coadapt.tools.measure.kinds import format_kinds, kind_runs, measure_kinds, measured_kinds
    from coadapt.ui.progress import ProgressBar
    from coadapt.world.costs import CALIBRATIONS_DIR, machine_fingerprint
    from coadapt.world.kinds import KindError, load_kinds

    measure = measured_kinds(cluster)
    try:
        kinds = load_kinds(args.kinds)
        needing = quota_kinds(cluster, kinds)  # KindError for an unknown kind
        if needing:
            require_cpu_controller(needing)
    except (KindError, CgroupUnavailable) as exc:
        return fail("calibrate", str(exc))
    for left in cleanup_leftovers():
        logging.getLogger(__name__).warning(
            "removed leftover cgroup %s from a run that did not end cleanly", left.path)
    out = (Path(args.out) if args.out
           else CALIBRATIONS_DIR / f"{machine_fingerprint()['id']}-kinds.json")
    bar = ProgressBar(total=kind_runs([a for a in apps if a in profiles], measure),
                      label="calibrate --quick kinds", unit="runs")
    speeds = measure_kinds(apps, kinds, measure, profiles, out, cores,
                           tick=lambda note: bar.advance(1, note))
    bar.close()
    sys.stdout.write(format_kinds(speeds) + "\n")
    sys.stdout.write(f"wrote {out} in {time.monotonic() - t0:.0f} s "
                     f"({machine_fingerprint()['cpu_model']})\n")
    return 0


def _fmt(table: dict[int, float]) -> str:
    return "/".join(f"K{k} {v:.2f}s" for k, v in sorted(table.items()))

