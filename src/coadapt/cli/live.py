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
    from coadapt.policies import policy_names
    from coadapt.runs.options import add_options

    p = sub.add_parser("live", help="run a workload with real processes and compare with sim",
                       description=DESCRIPTION, epilog=EPILOG,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--workload", default="live-mixed",
                   help="workload CSV or the name of one in traces/ (default live-mixed)")
    p.add_argument("--policy", default="pollux",
                   help="a policy, a comma list or 'all' (every primary policy but oracles: "
                   f"{', '.join(policy_names(oracles=False))}; default pollux); variants, by "
                   f"name only: {', '.join(policy_names(primary=False, variants=True, oracles=False))}")
    add_options(p, cluster="1x2")
    p.add_argument("--profiles", default="profiles",
                   help="profiles folder: T_iso for fairness, ETAs, measured costs (live-costs.json) "
                   "and the comparison simulation (default profiles)")
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


def _fail(message: str) -> int:
    sys.stderr.write(f"coadapt live: error: {message}\n")
    return 2


def run(args: argparse.Namespace) -> int:
    from coadapt.data.workload import WorkloadError, load_workload
    from coadapt.engine.limits import declared_limits
    from coadapt.jobs.registry import JOB_TYPES
    from coadapt.live.backend import LiveSettings
    from coadapt.live.checks import check_live_workload
    from coadapt.live.cores import check_cluster
    from coadapt.live.resume import ResumeError
    from coadapt.live.run import AlreadyRun
    from coadapt.policies import REGISTRY, policy_names
    from coadapt.profiles.profile import ProfileError
    from coadapt.runs.options import settings as run_settings
    from coadapt.sim.costs import CostError

    try:
        if args.resume:
            spec = _resume_spec(Path(args.resume))
        else:
            spec = vars(args).copy()
            spec["targets"] = _overrides(args.target, "--target")
            spec["evals"] = _overrides(args.eval_every, "--eval-every")
        if getattr(args, "observation_noise", 0.0):  # a resumed run never had it either
            return _fail(f"--observation-noise {args.observation_noise:g}: live jobs report "
                         "real measurements, which carry their own noise; the option is for "
                         "'coadapt simulate' and 'coadapt experiment' (use 0 or leave it out)")
        usable = policy_names(variants=True, oracles=False)
        names = policy_names(oracles=False) if spec["policy"] == "all" else spec["policy"].split(",")
        unknown = [n for n in names if n not in REGISTRY]
        if unknown:
            return _fail(f"--policy: unknown policy {', '.join(unknown)}; "
                         f"known: {', '.join(usable)} or 'all'")
        oracles = [n for n in names if n not in usable]
        if oracles:
            return _fail(f"--policy: {', '.join(oracles)} needs ground truth, which a live "
                         f"run does not have; choose from {', '.join(usable)}")
        workload = load_workload(spec["workload"], set(JOB_TYPES))
        profiles, costs = _profiles(spec["profiles"])
        limits = declared_limits({j.application for j in workload.jobs})
        settings = run_settings(argparse.Namespace(**spec), workload, profiles or {}, limits,
                                costs, show_progress=False)
        check_cluster(settings.cluster)
        check_live_workload(workload, settings.cluster)
        out = Path(spec["out"])
        if not args.resume:
            _claim(out, spec)
    except (ValueError, WorkloadError, ProfileError, CostError, ResumeError, AlreadyRun) as exc:
        return _fail(str(exc))
    if costs is None:
        log.warning("no %s/live-costs.json: policies assume a %.0f s restart; run "
                    "'coadapt calibrate' to measure it", spec["profiles"], settings.restart_delay)
    live = LiveSettings(seed=spec["seed"], status=not args.no_status,
                        targets=spec["targets"], eval_every=spec["evals"])
    return _run_policies(names, workload, settings, spec, live, profiles, costs, out,
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
    # Runs recorded before an option existed ran with what is now its Pollux-study value.
    spec = {"bandwidth": 10.0, "latency": 50.0, "new_jobs": "one",
            "tiresias_threshold": str(16 * 3600.0), "power": -1.0,
            **json.loads(path.read_text())}
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
    keep = ("workload", "policy", "cluster", "bandwidth", "latency", "interval", "profiles",
            "restart_delay", "new_jobs", "tiresias_threshold", "power", "seed", "targets",
            "evals")
    path.write_text(json.dumps({k: spec[k] for k in keep}, indent=1) + "\n")


def _profiles(spec: str):
    """Profiles and measured costs, both optional for a live run."""
    from coadapt.profiles.sources import load_profiles
    from coadapt.sim.costs import COSTS_FILE, LiveCosts

    path = Path(spec)
    if not path.exists():
        log.warning("%s: no profiles; no T_iso (fairness), ETAs or comparison", spec)
        return None, None
    costs = LiveCosts.load(path / COSTS_FILE) if (path / COSTS_FILE).exists() else None
    return load_profiles(spec), costs


def _run_policies(names, workload, settings, spec, live, profiles, costs, out: Path, *,
                  resume: bool, compare: bool) -> int:
    from coadapt.live.resume import ResumeError, load_resume
    from coadapt.live.run import EXIT_INTERRUPTED, LivePlan, run_live
    from coadapt.report.compare import write_comparison
    from coadapt.report.table import format_table

    cluster = settings.cluster
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
        plan = LivePlan(workload, name, settings, live, d, profiles, costs)
        summary = run_live(plan, resume=state)
        summaries.append(summary)
        if summary.get("interrupted"):
            sys.stderr.write(f"interrupted; continue with: coadapt live --resume {out}\n")
            return EXIT_INTERRUPTED
    write_comparison(summaries, out)
    sys.stdout.write(format_table(summaries, f"LIVE: {workload.name} on {cluster} "
                                  f"({len(workload.jobs)} jobs, real processes)") + "\n")
    if compare and profiles is not None and (spec.get("targets") or spec.get("evals")):
        log.warning("no comparison: --target/--eval-every changed the live jobs, the "
                    "profiles describe the registry's")
    elif compare and profiles is not None:
        _compare(names, workload, profiles, costs, settings, out)
    sys.stdout.write(f"results in {out}/\n")
    return 0


COMPARISONS = {
    "sim": ("calibrated", False,
            "PREDICTED: simulated (policies decide) with the calibrated costs and steps"),
    "sim-measured": ("measured", False,
                     "SIMULATED (policies decide) at the step times the run measured "
                     "(removes machine drift)"),
    "replay": ("measured", True,
               "SIMULATED replaying the live allocations and batch changes, at the measured "
               "step times (job-model error only)"),
}


def _compare(names, workload, profiles, costs, settings, out: Path) -> None:
    """Simulate the workload three ways and compare each with live
    (``COMPARISONS``): the prediction (policies decide, the machine as
    calibrated) in OUT/sim, the same at the step times the live run measured
    in OUT/sim-measured, and a replay of the live decisions at those step
    times in OUT/replay. The measured speeds are written to OUT/speed.json."""
    from coadapt.live.speed import observed_speed
    from coadapt.policies.replay import ReplayPolicy
    from coadapt.report.simlive import compare_dirs
    from coadapt.report.simlive_view import format_comparison, write_outputs
    from coadapt.sim.costs import refine_profiles
    from coadapt.sim.run import simulate_policy

    if costs is None:
        log.warning("comparing without measured live costs: run 'coadapt calibrate' first")
        kinds = {"sim": COMPARISONS["sim"]}
    else:
        kinds = COMPARISONS
    apps = {j.name: j.application for j in workload.jobs}
    truth = refine_profiles(profiles, costs) if costs is not None else profiles
    configs = {a: {(p.workers, p.local_bsz) for p in t.steps}
               for a, t in costs.types.items()} if costs is not None else None
    speeds = {name: {"calibrated": 1.0,
                     "measured": observed_speed(out / name, truth, apps, configs)}
              for name in names}
    (out / "speed.json").write_text(json.dumps(speeds, indent=1) + "\n")
    for kind, (speed, replaying, title) in kinds.items():
        for name in names:
            log_path = out / name / "events.jsonl"
            scaled = None if costs is None else costs.scaled(
                speeds[name][speed], colocation=speed != "measured")
            replay = ReplayPolicy.from_log(log_path) if replaying else None
            simulate_policy(workload, profiles, name, settings, out / kind / name, costs=scaled,
                            replay=replay)
        result = compare_dirs(out / kind, out)
        write_outputs(result, out if kind == "sim" else out / kind)
        sys.stdout.write(f"\n{title}\n{format_comparison(result)}\n")
    for name, s in speeds.items():
        measured = ", ".join(f"{a} {v:.3f}" for a, v in sorted(s["measured"].items()))
        sys.stdout.write(f"{name}: at the calibrated configurations, steady steps took "
                         f"{measured or '(none ran there)'} x their calibrated time\n")

