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

Before the first job starts it (1) calibrates this machine ('coadapt calibrate
--quick', about 3 minutes; --calibration FILE reuses one) into OUT/calibration.json,
and (2) simulates the workload with the same cluster, options and calibration
into OUT/prediction/<policy>/: the PREDICTION, whose digest goes into the live
log's header. Then it runs the jobs: OUT/<policy>/events.jsonl, jobs.csv,
summary.json and the jobs' folders OUT/<policy>/jobs/<name>/ (checkpoint, worker
logs, worker events). Unless --no-compare it then writes, each labelled:
OUT/compare/prediction/ (prediction vs live), OUT/sim-measured/ and
OUT/compare/sim-measured/ (re-simulated at the run's measured speed),
OUT/replay/ and OUT/compare/replay/ (the live decisions replayed at that speed),
and OUT/drift.{csv,png} (the run's speed per type and minute vs the calibration).

Ctrl-C or SIGTERM stops every job at its next step with a checkpoint and ends
the log as interrupted (a second signal kills at once); continue with
'coadapt live --resume OUT' (the downtime counts in no JCT).
"""

EPILOG = """\
examples:
  coadapt live                                   # live-mixed-5 under pollux on 1x2, compare
  coadapt live --calibration out/live/calibration.json --out out/live2   # reuse a calibration
  coadapt live --workload live-burst --policy all --out out/live-burst
  coadapt live --resume out/live                 # continue an interrupted run
  coadapt live --cluster 2x1 --network emulated --bandwidth 0.1 --workload live-net-a \\
      --policy all --out out/live-net   # two emulated nodes, a 100 Mbit/s link each
"""

RUN_FILE = "live.json"


def register(sub: argparse._SubParsersAction) -> None:
    from coadapt.policies import policy_names
    from coadapt.runs.options import add_options

    p = sub.add_parser("live", help="run a workload with real processes and compare with sim",
                       description=DESCRIPTION, epilog=EPILOG,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--workload", default="live-mixed-5",
                   help="workload CSV or the name of one in traces/ (default live-mixed-5, "
                   "about 3 minutes a policy here; longer: live-mixed, live-burst, "
                   "live-poorbatch)")
    p.add_argument("--policy", default="pollux",
                   help="a policy, a comma list or 'all' (every primary policy but oracles: "
                   f"{', '.join(policy_names(oracles=False))}; default pollux); variants, by "
                   f"name only: {', '.join(policy_names(primary=False, variants=True, oracles=False))}")
    add_options(p, cluster="1x2")
    p.add_argument("--profiles", default="profiles",
                   help="profiles folder: T_iso for fairness, ETAs, measured costs (live-costs.json) "
                   "and the comparison simulation (default profiles)")
    p.add_argument("--out", default="out/live", help="output folder (default out/live)")
    p.add_argument("--calibration", default="measure", metavar="measure|this|profiles|PATH",
                   help="the machine calibration the prediction uses: 'measure' (default) "
                   "runs 'coadapt calibrate --quick' on this machine first; 'this' reuses this "
                   "machine's newest in out/calibrations/; 'profiles' the shipped one "
                   "(another machine: warned); or a file")
    p.add_argument("--network", choices=("loopback", "emulated"), default="loopback",
                   help="between nodes: 'loopback' (default; every node on this machine's "
                   "loopback, nothing shaped) or 'emulated': each node a network namespace "
                   "on its own cores behind a switch, its link shaped to --bandwidth with tc "
                   "(needs root). Emulated runs measure the network first (a short 'coadapt "
                   "netbench' into OUT/netbench/) unless --net-calibration FILE is given")
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


CALIBRATION_FILE = "calibration.json"


def run(args: argparse.Namespace) -> int:
    from coadapt.backends.live.backend import LiveSettings
    from coadapt.backends.live.cores import check_cluster
    from coadapt.backends.live.nodes import NetworkUnavailable, require_capability
    from coadapt.jobs.registry import JOB_TYPES
    from coadapt.policies import REGISTRY, policy_names
    from coadapt.runs.live.checks import check_live_workload
    from coadapt.runs.live.resume import ResumeError
    from coadapt.runs.live.run import AlreadyRun
    from coadapt.runs.options import settings as run_settings
    from coadapt.world.costs import CostError
    from coadapt.world.limits import declared_limits
    from coadapt.world.profiles.profile import ProfileError
    from coadapt.world.workload import WorkloadError, load_workload

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
        profiles = _profiles(spec["profiles"])
        limits = declared_limits({j.application for j in workload.jobs})
        out = Path(spec["out"])
        # Checked before anything is measured: a bad cluster fails in a second.
        cluster = run_settings(argparse.Namespace(**spec), workload, {}, limits, None,
                               show_progress=False).cluster
        check_cluster(cluster)
        check_live_workload(workload, cluster)
        if spec.get("network") == "emulated":
            require_capability()
        if not args.resume:
            _claim(out, spec)
        costs = _calibration(spec, out, workload, profiles, resumed=bool(args.resume))
        if spec.get("network") == "emulated" and not args.resume:
            _net_calibration(spec, out, cluster)
        settings = run_settings(argparse.Namespace(**spec), workload, profiles or {}, limits,
                                costs, show_progress=False)
    except (ValueError, WorkloadError, ProfileError, CostError, ResumeError, AlreadyRun,
            NetworkUnavailable) as exc:
        return _fail(str(exc))
    if costs is None:
        log.warning("no calibration: policies assume a %.0f s restart and nothing is "
                    "predicted; run 'coadapt calibrate --quick'", settings.restart_delay)
    live = LiveSettings(seed=spec["seed"], status=not args.no_status,
                        targets=spec["targets"], eval_every=spec["evals"],
                        network=spec.get("network") or "loopback")
    return _run_policies(names, workload, settings, spec, live, profiles, costs, out,
                         resume=bool(args.resume), compare=not args.no_compare)


def _calibration(spec: dict, out: Path, workload, profiles, *, resumed: bool):
    """The machine calibration of this run, saved as OUT/calibration.json: a
    resumed run keeps its own; 'measure' calibrates this machine now."""
    from coadapt.world.costs import LiveCosts, describe_calibration, resolve_costs

    path = out / CALIBRATION_FILE
    if resumed:
        costs = LiveCosts.load(path) if path.exists() else None
    elif spec.get("calibration", "measure") == "measure":
        from coadapt.tools.measure.calibrate import quick_calibration, quick_phases
        from coadapt.ui.progress import ProgressBar

        apps = sorted({j.application for j in workload.jobs})
        sys.stdout.write(f"calibrating this machine first ({', '.join(apps)}; about 3 "
                         "minutes; --calibration FILE reuses one)\n")
        bar = ProgressBar(total=quick_phases(apps), label="calibrate --quick", unit="phases")
        costs = quick_calibration(apps, path, profiles, tick=lambda note: bar.advance(1, note))
        bar.close()
    else:
        costs = resolve_costs(spec["calibration"], spec["profiles"])
        if costs is not None:
            costs.save(path)
    if costs is not None:
        sys.stdout.write(f"calibration: {describe_calibration(costs)}\n")
    return costs


def _net_calibration(spec: dict, out: Path, cluster) -> None:
    """The network the prediction charges on emulated nodes: --net-calibration
    FILE, else a short netbench now (K = 2..nodes at this run's bandwidth) into
    OUT/netbench/; recorded in live.json so a resumed run keeps it."""
    from coadapt.tools.netbench.bench import BenchPlan, fit_table, run_netbench, save
    from coadapt.ui.progress import ProgressBar
    from coadapt.util.atomic import atomic_write_text
    from coadapt.world.profiles.network import load_network_calibration

    if spec.get("net_calibration"):
        cal = load_network_calibration(spec["net_calibration"])
    else:
        bw = float(spec["bandwidth"])
        plan = BenchPlan(ks=tuple(range(2, min(cluster.num_nodes, 8) + 1)), bandwidths=(bw,),
                         reps=5)
        sys.stdout.write(f"measuring the emulated network first ({bw:g} Gbit/s, K = "
                         f"{', '.join(map(str, plan.ks))}; --net-calibration FILE reuses one)\n")
        nb = out / "netbench"
        nb.mkdir(parents=True, exist_ok=True)
        bar = ProgressBar(total=plan.rounds(), label="netbench", unit="rounds")
        cal, table = fit_table(run_netbench(plan, nb, tick=lambda n: bar.advance(1, n)),
                               float(spec["latency"]))
        bar.close()
        path = save(cal, table, nb)
        if path is None:
            log.warning("the emulated network had too few network-bound points to fit: the "
                        "prediction charges the declared network")
            return
        spec["net_calibration"] = str(path)
        atomic_write_text(out / RUN_FILE, json.dumps({k: spec.get(k) for k in RUN_KEYS},
                                                     indent=1) + "\n")
    sys.stdout.write(f"network: {cal.describe()}\n")


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
    from coadapt.runs.live.resume import ResumeError

    path = out / RUN_FILE
    if not path.exists():
        raise ResumeError(f"{path}: not found; --resume takes the --out folder of a live run")
    # Runs recorded before an option existed ran with what is now its Pollux-study value.
    spec = {"bandwidth": 10.0, "latency": 50.0, "new_jobs": "one", "network": "loopback",
            "net_calibration": None,
            "tiresias_threshold": str(16 * 3600.0), "power": -1.0, "preset": None,
            "efficiency_truth": "curves", **json.loads(path.read_text())}
    spec["out"] = str(out)
    return spec


RUN_KEYS = ("workload", "policy", "cluster", "bandwidth", "latency", "interval", "profiles",
            "restart_delay", "new_jobs", "tiresias_threshold", "power", "seed", "targets",
            "evals", "calibration", "preset", "efficiency_truth", "network", "net_calibration")


def _claim(out: Path, spec: dict) -> None:
    """Record the invocation (for --resume); refuse a folder that holds a run."""
    from coadapt.runs.live.run import AlreadyRun
    from coadapt.util.atomic import atomic_write_text

    path = out / RUN_FILE
    if path.exists():
        raise AlreadyRun(f"{out}: holds a live run already; continue it with "
                         f"'coadapt live --resume {out}' or choose another --out")
    out.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, json.dumps({k: spec.get(k) for k in RUN_KEYS}, indent=1) + "\n")


def _profiles(spec: str):
    """The profiles (T_iso, ETAs, the prediction); optional for a live run."""
    from coadapt.world.profiles.sources import load_profiles

    if not Path(spec).exists():
        log.warning("%s: no profiles; no T_iso (fairness), ETAs, prediction or comparison",
                    spec)
        return None
    return load_profiles(spec)


def _run_policies(names, workload, settings, spec, live, profiles, costs, out: Path, *,
                  resume: bool, compare: bool) -> int:
    from coadapt.report.compare import write_comparison
    from coadapt.report.table import format_table
    from coadapt.runs.live.predict import load_predictions, predict
    from coadapt.runs.live.resume import ResumeError, load_resume
    from coadapt.runs.live.run import EXIT_INTERRUPTED, LivePlan, run_live
    from coadapt.world.costs import describe_calibration

    cluster = settings.cluster
    changed = bool(spec.get("targets") or spec.get("evals"))
    predictions = load_predictions(out) if resume else {}
    if profiles is not None and not changed and not predictions:
        predictions = predict(workload, profiles, names, settings, costs, out)
        sys.stdout.write("PREDICTION written before the run: " + ", ".join(
            f"{n} mean JCT {p.mean_jct_s / 60:.2f} min" for n, p in predictions.items()
            if p.mean_jct_s is not None) + f" (simulated; {out}/prediction/)\n")
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
        pred = predictions.get(name)
        header = {"calibration": None if costs is None else {
                      "file": str(out / CALIBRATION_FILE), "about": describe_calibration(costs)},
                  "prediction": None if pred is None else {"path": pred.path,
                                                           "digest": pred.digest}}
        plan = LivePlan(workload, name, settings, live, d, profiles, costs, header)
        summary = run_live(plan, resume=state)
        summaries.append(summary)
        if summary.get("interrupted"):
            sys.stderr.write(f"interrupted; continue with: coadapt live --resume {out}\n")
            return EXIT_INTERRUPTED
    write_comparison(summaries, out)
    sys.stdout.write(format_table(summaries, f"LIVE: {workload.name} on {cluster} "
                                  f"({len(workload.jobs)} jobs, real processes)") + "\n")
    if compare and profiles is not None and changed:
        log.warning("no comparison: --target/--eval-every changed the live jobs, the "
                    "profiles describe the registry's")
    elif compare and profiles is not None:
        from coadapt.runs.live.judge import judge

        result = judge(names, workload, profiles, costs, settings, out)
        sys.stdout.write("\n" + result.text + "\n")
    sys.stdout.write(f"results in {out}/\n")
    return 0
