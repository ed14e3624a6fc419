"""``coadapt live``: run a job set with real processes under each policy, then
simulate the same workload and compare (``--no-compare`` skips that)."""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path

log = logging.getLogger(__name__)

DESCRIPTION = """\
Run a workload with REAL training processes on this machine's cores, under one
or more scheduling policies, with the same engine, policies and event log as
'coadapt simulate'. Every job is a data-parallel worker group (torch.distributed,
gloo) pinned to the cores its slots map to; a resize checkpoints and relaunches
the group, a batch-size change on the same workers happens in place; a job
completes when it reaches its validation target and a fresh process verifies it.

Writes OUT/<policy>/events.jsonl, jobs.csv, summary.json and the jobs' own
folders OUT/<policy>/jobs/<name>/ (checkpoint, worker logs, worker events).
Unless --no-compare, it then simulates the same workload on the same cluster
with the costs measured by 'coadapt calibrate' (OUT/sim/<policy>/) and writes
OUT/sim_vs_live.{csv,json,png}.

Ctrl-C or SIGTERM stops every job at its next step with a checkpoint and ends
the log as interrupted (a second signal kills at once); continue with
'coadapt live --resume OUT' (the downtime counts in no JCT).
"""

EPILOG = """\
examples:
  coadapt live                                   # live-mixed under pollux on 1x2, compare
  coadapt live --workload live-burst --policy all --out out/live-burst
  coadapt live --resume out/live                 # continue an interrupted run
"""

RUN_FILE = "live.json"


def register(sub: argparse._SubParsersAction) -> None:
    from coadapt.policies import REGISTRY

    p = sub.add_parser("live", help="run a workload with real processes and compare with sim",
                       description=DESCRIPTION, epilog=EPILOG,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--workload", default="live-mixed",
                   help="workload CSV or the name of one in traces/ (default live-mixed)")
    p.add_argument("--policy", default="pollux",
                   help="a policy, a comma list or 'all' (every policy but oracles: "
                   f"{', '.join(sorted(n for n, c in REGISTRY.items() if not c.uses_oracle))}; "
                   "default pollux)")
    p.add_argument("--cluster", default="1x2",
                   help="NODESxSLOTS; slots are this machine's cores (default 1x2)")
    p.add_argument("--interval", type=float, default=15.0,
                   help="scheduling round in seconds (default 15)")
    p.add_argument("--profiles", default="profiles",
                   help="profiles folder: T_iso for fairness, ETAs, measured costs (live-costs.json) "
                   "and the comparison simulation (default profiles)")
    p.add_argument("--restart-delay", type=float, default=None,
                   help="restart delay the policies assume (default: the median measured "
                   "restart in PROFILES/live-costs.json)")
    p.add_argument("--seed", type=int, default=0, help="seed of every job (default 0)")
    p.add_argument("--out", default="out/live", help="output folder (default out/live)")
    p.add_argument("--resume", metavar="DIR", default=None,
                   help="continue the interrupted run in DIR (other options are taken from it)")
    p.add_argument("--no-compare", action="store_true",
                   help="do not simulate the workload and compare afterwards")
    p.add_argument("--no-status", action="store_true", help="no live status table")
    p.add_argument("--target", action="append", default=[], metavar="TYPE=VALUE",
                   help="override a job type's validation target (repeatable; e.g. a quick "
                   "smoke run: --target mlp-mnist1d=0.5)")
    p.add_argument("--eval-every", action="append", default=[], metavar="TYPE=PROGRESS",
                   help="override a job type's validation interval (repeatable)")
    p.set_defaults(func=run)
    register_calibrate(sub)


def _fail(message: str) -> int:
    sys.stderr.write(f"coadapt live: error: {message}\n")
    return 2


def run(args: argparse.Namespace) -> int:
    from coadapt.engine.cluster import ClusterSpec
    from coadapt.jobs.registry import JOB_TYPES
    from coadapt.live.backend import LiveSettings
    from coadapt.live.cores import check_cluster
    from coadapt.live.resume import ResumeError
    from coadapt.live.run import AlreadyRun
    from coadapt.policies import REGISTRY
    from coadapt.profiling.profile import ProfileError
    from coadapt.sim.costs import CostError
    from coadapt.workloads import WorkloadError, load_workload

    try:
        if args.resume:
            spec = _resume_spec(Path(args.resume))
        else:
            spec = vars(args).copy()
            spec["targets"] = _overrides(args.target, "--target")
            spec["evals"] = _overrides(args.eval_every, "--eval-every")
        usable = sorted(n for n, cls in REGISTRY.items() if not cls.uses_oracle)
        names = usable if spec["policy"] == "all" else spec["policy"].split(",")
        unknown = [n for n in names if n not in REGISTRY]
        if unknown:
            return _fail(f"--policy: unknown policy {', '.join(unknown)}; "
                         f"known: {', '.join(usable)} or 'all'")
        oracles = [n for n in names if n not in usable]
        if oracles:
            return _fail(f"--policy: {', '.join(oracles)} needs ground truth, which a live "
                         f"run does not have; choose from {', '.join(usable)}")
        if spec["interval"] <= 0:
            return _fail("--interval must be > 0 seconds")
        cluster = ClusterSpec.parse(spec["cluster"])
        check_cluster(cluster)
        workload = load_workload(spec["workload"], set(JOB_TYPES))
        profiles, costs = _profiles(spec["profiles"])
        from coadapt.live.checks import check_live_workload

        check_live_workload(workload, cluster)
        out = Path(spec["out"])
        if not args.resume:
            _claim(out, spec)
    except (ValueError, WorkloadError, ProfileError, CostError, ResumeError, AlreadyRun) as exc:
        return _fail(str(exc))
    delay = spec["restart_delay"]
    if delay is None:
        delay = costs.policy_restart_delay() if costs is not None else 5.0
        if costs is None:
            log.warning("no %s/live-costs.json: policies assume a %.0f s restart; run "
                        "'coadapt calibrate' to measure it", spec["profiles"], delay)
    spec["restart_delay"] = delay
    live = LiveSettings(seed=spec["seed"], status=not args.no_status,
                        targets=spec["targets"], eval_every=spec["evals"])
    return _run_policies(names, workload, cluster, spec, live, profiles, costs, out,
                         resume=bool(args.resume), compare=not args.no_compare)


def _overrides(items: list[str], flag: str) -> dict[str, float]:
    from coadapt.jobs.registry import JOB_TYPES

    out = {}
    for item in items:
        name, eq, value = item.partition("=")
        if not eq or name not in JOB_TYPES:
            raise ValueError(f"{flag} {item!r}: expected TYPE=VALUE with TYPE one of "
                             f"{', '.join(sorted(JOB_TYPES))}")
        try:
            out[name] = float(value)
        except ValueError:
            raise ValueError(f"{flag} {item!r}: {value!r} is not a number") from None
    return out


def _resume_spec(out: Path) -> dict:
    from coadapt.live.resume import ResumeError

    path = out / RUN_FILE
    if not path.exists():
        raise ResumeError(f"{path}: not found; --resume takes the --out folder of a live run")
    spec = json.loads(path.read_text())
    spec["out"] = str(out)
    return spec


def _claim(out: Path, spec: dict) -> None:
    """Record the invocation (for --resume); refuse a folder that holds a run."""
    from coadapt.live.run import AlreadyRun

    path = out / RUN_FILE
    if path.exists():
        raise AlreadyRun(f"{out}: holds a live run already; continue it with "
                         f"'coadapt live --resume {out}' or choose another --out")
    out.mkdir(parents=True, exist_ok=True)
    keep = ("workload", "policy", "cluster", "interval", "profiles", "restart_delay", "seed",
            "targets", "evals")
    path.write_text(json.dumps({k: spec[k] for k in keep}, indent=1) + "\n")


def _profiles(spec: str):
    """Profiles and measured costs, both optional for a live run."""
    from coadapt.profiling.sources import load_profiles
    from coadapt.sim.costs import COSTS_FILE, LiveCosts

    path = Path(spec)
    if not path.exists():
        log.warning("%s: no profiles; no T_iso (fairness), ETAs or comparison", spec)
        return None, None
    costs = LiveCosts.load(path / COSTS_FILE) if (path / COSTS_FILE).exists() else None
    return load_profiles(spec), costs


def _run_policies(names, workload, cluster, spec, live, profiles, costs, out: Path, *,
                  resume: bool, compare: bool) -> int:
    from coadapt.engine.run import RunSettings
    from coadapt.live.resume import ResumeError, load_resume
    from coadapt.live.run import EXIT_INTERRUPTED, LivePlan, run_live
    from coadapt.report.compare import write_comparison
    from coadapt.report.table import format_table

    settings = RunSettings(cluster, spec["interval"], spec["restart_delay"], spec["seed"],
                           show_progress=False)
    summaries = []
    for name in names:
        d = out / name
        state = None
        if resume and (d / "events.jsonl").exists():
            try:
                state = load_resume(d, workload)
            except ResumeError as exc:
                if "finished" not in str(exc):
                    return _fail(str(exc))
                summaries.append(json.loads((d / "summary.json").read_text()))
                continue
        plan = LivePlan(workload, name, settings, live, d, profiles)
        summary = run_live(plan, resume=state)
        summaries.append(summary)
        if summary.get("interrupted"):
            sys.stderr.write(f"interrupted; continue with: coadapt live --resume {out}\n")
            return EXIT_INTERRUPTED
    write_comparison(summaries, out)
    sys.stdout.write(format_table(summaries, f"LIVE: {workload.name} on {cluster} "
                                  f"({len(workload.jobs)} jobs, real processes)") + "\n")
    if compare and profiles is not None:
        _compare(names, workload, profiles, costs, settings, out)
    sys.stdout.write(f"results in {out}/\n")
    return 0


def _compare(names, workload, profiles, costs, settings, out: Path) -> None:
    """Simulate the workload twice: with the policies deciding (OUT/sim) and
    replaying the live allocations (OUT/replay); compare both with live."""
    from coadapt.policies.replay import ReplayPolicy
    from coadapt.report.simlive import compare_dirs, format_comparison, write_outputs
    from coadapt.sim.run import simulate_policy

    if costs is None:
        log.warning("comparing without measured live costs: run 'coadapt calibrate' first")
    for kind in ("sim", "replay"):
        for name in names:
            replay = ReplayPolicy.from_log(out / name / "events.jsonl") if kind == "replay" \
                else None
            simulate_policy(workload, profiles, name, settings, out / kind / name, costs=costs,
                            replay=replay)
        result = compare_dirs(out / kind, out)
        write_outputs(result, out if kind == "sim" else out / kind)
        title = ("SIMULATED (policies decide) vs LIVE" if kind == "sim" else
                 "SIMULATED replaying the live allocations vs LIVE (job-model error only)")
        sys.stdout.write(f"\n{title}\n{format_comparison(result)}\n")


CALIBRATE_HELP = """\
Measure what a live job pays besides its steady training steps, per job type,
with real worker groups pinned to cores: first start, restart (stop, checkpoint,
relaunch, resume), each validation with its checkpoint, the fresh-process
verification, and the step-time slowdown next to another job on the same node.
Writes OUT (default PROFILES/live-costs.json), which 'coadapt simulate' and the
comparison after 'coadapt live' charge instead of one fixed restart delay.
Takes about 6 minutes for the four job types on an idle 2-core machine.
"""


def register_calibrate(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("calibrate", help="measure live start/restart/validation/verify costs",
                       description=CALIBRATE_HELP,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--profiles", default="profiles",
                   help="profiles folder (step times pace the validations; default profiles)")
    p.add_argument("--types", default=None,
                   help="comma list of job types (default: all in the job registry)")
    p.add_argument("--out", default=None, help="output file (default PROFILES/live-costs.json)")
    p.add_argument("--phase", type=float, default=6.0,
                   help="seconds of training per phase (default 6)")
    p.add_argument("--pair", type=float, default=10.0,
                   help="seconds side by side per pair of job types (default 10)")
    p.set_defaults(func=calibrate_cmd)


def calibrate_cmd(args: argparse.Namespace) -> int:
    import itertools

    from coadapt.jobs.registry import JOB_TYPES
    from coadapt.live.calibrate import CalibrationSettings, calibrate
    from coadapt.live.cores import usable_cores
    from coadapt.profiling.profile import ProfileError
    from coadapt.profiling.sources import load_profiles
    from coadapt.report.progress import ProgressBar
    from coadapt.sim.costs import COSTS_FILE

    apps = sorted(JOB_TYPES) if args.types is None else args.types.split(",")
    unknown = [a for a in apps if a not in JOB_TYPES]
    if unknown:
        return _fail(f"--types: unknown job type {', '.join(unknown)}; "
                     f"known: {', '.join(sorted(JOB_TYPES))}")
    if args.phase <= 0 or args.pair <= 0:
        return _fail("--phase and --pair must be > 0 seconds")
    cores = usable_cores()
    if len(cores) < 2:
        return _fail(f"calibration needs 2 cores (1 and 2 workers, pairs); this machine has "
                     f"{len(cores)} usable")
    steps = {}
    try:
        profiles = load_profiles(args.profiles) if Path(args.profiles).exists() else {}
    except ProfileError as exc:
        return _fail(str(exc))
    for app in apps:
        if app in profiles:
            p = profiles[app]
            steps[app] = p.throughput((1,), p.init_batch_size)[0]
    s = CalibrationSettings(phase_s=args.phase, pair_s=args.pair, cores=(cores[0], cores[1]))
    out = Path(args.out) if args.out else Path(args.profiles) / COSTS_FILE
    pairs = sum(1 if a == b else 2 for a, b in itertools.combinations_with_replacement(apps, 2))
    bar = ProgressBar(total=len(apps) * (len(s.cycle) + 2) + 2 * len(apps) + pairs,
                      label="calibrate", unit="phases")
    costs = calibrate(apps, out, s, steps, tick=lambda note: bar.advance(1, note))
    bar.close()
    for app, c in sorted(costs.types.items()):
        sys.stdout.write(
            f"{app:18s} start {_fmt(c.start)}  restart {_fmt(c.restart)}  eval {_fmt(c.eval)}  "
            f"verify {c.verify:.2f} s  colocation "
            + ", ".join(f"{k}: {v:.3f}" for k, v in sorted(c.colocation.items())) + "\n")
    sys.stdout.write(f"wrote {out}\n")
    return 0


def _fmt(table: dict[int, float]) -> str:
    return "/".join(f"K{k} {v:.2f}s" for k, v in sorted(table.items()))
