"""What ``coadapt live`` does, in order: check the request, claim OUT, calibrate
this machine (and the emulated network), write the prediction, run every
policy with real processes, judge the run against its simulations.

The command (:mod:`coadapt.cli.live`) parses the options, calls
:func:`live_spec` and :func:`run_workflow` and turns a
:class:`LiveRequestError` into its error line and exit status 2. Anything
refused here is refused before a job starts (or, resuming, before the first
policy that cannot continue), so nothing half-done is left to clean up.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from coadapt.backends.live.backend import LiveSettings
from coadapt.backends.live.cores import check_cluster
from coadapt.backends.live.kinds import (
    CgroupUnavailable,
    check_kinds,
    cleanup_leftovers,
    quota_kinds,
    require_cpu_controller,
)
from coadapt.backends.live.nodes import NetworkUnavailable, require_capability
from coadapt.jobs.registry import JOB_TYPES
from coadapt.policies import REGISTRY, policy_names, resolve_policies
from coadapt.report.compare import write_comparison
from coadapt.report.markdown import write_run_report
from coadapt.report.table import format_table
from coadapt.runs.live.checks import check_live_workload
from coadapt.runs.live.judge import judge
from coadapt.runs.live.predict import load_predictions, predict
from coadapt.runs.live.resume import ResumeError, load_resume
from coadapt.runs.live.run import EXIT_INTERRUPTED, AlreadyRun, LivePlan, run_live
from coadapt.runs.options import settings as run_settings
from coadapt.runs.options import world_of
from coadapt.runs.settings import RunSettings
from coadapt.tools.measure.calibrate import quick_calibration, quick_phases
from coadapt.tools.netbench.bench import BenchPlan, fit_table, run_netbench, save
from coadapt.ui.progress import ProgressBar
from coadapt.util.atomic import atomic_write_text
from coadapt.util.lock import FolderBusy
from coadapt.util.outdir import FolderHeld, Ownership, check_out_path, claim
from coadapt.world.cluster import ClusterSpec
from coadapt.world.costs import (
    REFERENCE,
    CostError,
    LiveCosts,
    calibration_line,
    calibration_provenance,
    describe_calibration,
    resolve_costs,
)
from coadapt.world.kinds import KindError, NodeKind, load_kinds
from coadapt.world.profiles.network import load_network_calibration
from coadapt.world.profiles.profile import AppProfile, ProfileError
from coadapt.world.profiles.sources import load_profiles
from coadapt.world.workload import Workload, WorkloadError, load_workload
from coadapt.world.world import World

log = logging.getLogger(__name__)

RUN_FILE = "live.json"
CALIBRATION_FILE = "calibration.json"
RUN_KEYS = ("workload", "policy", "policy_arg", "baseline", "cluster", "bandwidth", "latency",
            "interval", "profiles", "restart_delay", "new_jobs", "tiresias_threshold", "power",
            "seed", "targets", "evals", "calibration", "preset", "efficiency_truth", "network",
            "net_calibration", "kinds")
"""What live.json records of a run: enough for --resume to rebuild it."""

# Input the run cannot use: reported as one error line, exit status 2.
_REFUSED = (ValueError, WorkloadError, ProfileError, CostError, ResumeError, AlreadyRun,
            NetworkUnavailable, KindError, CgroupUnavailable)

Spec = dict[str, Any]
Profiles = Mapping[str, AppProfile]


class LiveRequestError(Exception):
    """A live run refused; the message says why (the command exits 2)."""


@dataclass(frozen=True)
class Invocation:
    """What this invocation decides beyond the run's spec (never recorded:
    a resumed run takes them from its own command line)."""

    resumed: bool = False
    status: bool = True
    compare: bool = True
    observation_noise: float = 0.0


def live_spec(args: argparse.Namespace) -> Spec:
    """The run's spec: the recorded one of ``--resume DIR``, else the options
    with the --target/--eval-every overrides parsed."""
    try:
        if args.resume:
            return _resume_spec(Path(args.resume))
        spec = vars(args).copy()
        spec["targets"] = _overrides(args.target, "--target")
        spec["evals"] = _overrides(args.eval_every, "--eval-every")
        return spec
    except _REFUSED as exc:
        raise LiveRequestError(str(exc)) from exc


def run_workflow(spec: Spec, invocation: Invocation) -> int:
    """Run the live workflow for ``spec``; the exit status (0, or
    EXIT_INTERRUPTED after a signal). LiveRequestError for a refused request."""
    if invocation.observation_noise:  # a resumed run never had it either
        raise LiveRequestError(
            f"--observation-noise {invocation.observation_noise:g}: live jobs report real "
            "measurements, which carry their own noise; the option is for 'coadapt simulate' "
            "and 'coadapt experiment' (use 0 or leave it out)")
    names = _policies(spec["policy"])
    _remove_leftovers()
    ownership = Ownership(force=bool(spec.get("force")), resume=invocation.resumed)
    try:  # every option and input is checked before OUT is claimed or anything measured
        workload = load_workload(spec["workload"], set(JOB_TYPES))
        profiles = _profiles(spec["profiles"])
        out = Path(spec["out"])
        check_out_path(out)
        cluster = world_and_settings(spec, workload, {}, None)[1].for_policies(
            names, spec.get("policy_arg") or ()).cluster
        check_cluster(cluster)
        check_live_workload(workload, cluster)
        kinds = _kinds(spec, cluster)
        if spec.get("network") == "emulated":
            require_capability()
        given = None if invocation.resumed else _given_calibration(spec, workload)
    except _REFUSED as exc:
        raise LiveRequestError(str(exc)) from exc
    try:
        with claim(out, "live", ownership):  # locked for the run: a second one is refused
            return _claimed(spec, invocation, names, workload, profiles, out, cluster, kinds, given)
    except (FolderBusy, FolderHeld) as exc:
        raise LiveRequestError(str(exc)) from exc


def _claimed(spec: Spec, invocation: Invocation, names: list[str], workload: Workload,
             profiles: Profiles | None, out: Path, cluster: ClusterSpec,
             kinds: dict[str, NodeKind], given: LiveCosts | None) -> int:
    """The run once OUT is this process's: record it, calibrate, run the policies."""
    try:
        if not invocation.resumed:
            _record(out / RUN_FILE, spec)
        costs = _calibration(spec, out, workload, profiles, given, resumed=invocation.resumed)
        if spec.get("network") == "emulated" and not invocation.resumed:
            _net_calibration(spec, out, cluster)
        world, settings = world_and_settings(spec, workload, profiles or {}, costs)
        settings = settings.for_policies(names, spec.get("policy_arg") or ())
    except _REFUSED as exc:
        raise LiveRequestError(str(exc)) from exc
    if costs is None:
        log.warning("no calibration: policies assume a %.0f s restart and nothing is "
                    "predicted; run 'coadapt calibrate --quick'", settings.restart_delay)
    live = LiveSettings(seed=spec["seed"], status=invocation.status, targets=spec["targets"],
                        eval_every=spec["evals"], network=spec.get("network") or "loopback")
    return _run_policies(names, workload, world, settings, spec, live, profiles is not None,
                         out, resume=invocation.resumed, compare=invocation.compare, kinds=kinds)


def world_and_settings(spec: Spec, workload: Workload, profiles: Profiles,
                       costs: LiveCosts | None) -> tuple[World, RunSettings]:
    """The run's world (cluster, limits, profiles refined by ``costs``) and its
    settings, both from the spec: the one place a live run builds them."""
    apps = {j.application for j in workload.jobs}
    world = world_of(argparse.Namespace(**spec), profiles, costs, apps)
    return world, run_settings(argparse.Namespace(**spec), world, workload, show_progress=False)


def _remove_leftovers() -> None:
    """Remove the cgroups of earlier runs that did not end cleanly (their
    executor was killed), and say so."""
    for left in cleanup_leftovers():
        log.warning("removed leftover cgroup %s from a run that did not end cleanly%s",
                    left.path, f" (killed pids {list(left.killed)})" if left.killed else "")


def _kinds(spec: Spec, cluster: ClusterSpec) -> dict[str, NodeKind]:
    """The node kinds (shipped, plus --kinds FILE); KindError for a cluster
    kind none defines, CgroupUnavailable when a quota kind cannot be made."""
    kinds = load_kinds(spec.get("kinds"))
    check_kinds(cluster, kinds)
    needing = quota_kinds(cluster, kinds)
    if needing:
        require_cpu_controller(needing)
    return kinds


def _policies(policy: str | Sequence[str]) -> list[str]:
    """The policies to run: names or plugin specs (a list, or a comma list as
    live.json keeps them), 'all' among them; none that needs ground truth."""
    given = policy.split(",") if isinstance(policy, str) else list(policy)
    try:
        names = resolve_policies(given, oracles=False)
    except ValueError as exc:
        raise LiveRequestError(str(exc).strip("'\"")) from exc
    oracles = [n for n in names if REGISTRY[n].uses_oracle]
    if oracles:
        usable = policy_names(variants=True, oracles=False)
        raise LiveRequestError(f"--policy: {', '.join(oracles)} needs ground truth, which a "
                               f"live run does not have; choose from {', '.join(usable)}")
    return names


def _given_calibration(spec: Spec, workload: Workload) -> LiveCosts | None:
    """The calibration ``--calibration`` names (None: 'measure' or none), checked
    to cover the workload's job types before anything is claimed or run.
    ``reference`` (or ``profiles``) is the profiles folder's, which must exist."""
    choice = spec.get("calibration", "measure")
    if choice == "measure":
        return None
    costs = resolve_costs(choice, spec["profiles"])
    if costs is None and choice in REFERENCE:
        raise CostError(f"--calibration {choice}: {spec['profiles']} has no live-costs.json; "
                        "use --calibration measure (the default) or a calibration file")
    if costs is not None:
        costs.require({j.application for j in workload.jobs})
    return costs


def _calibration(spec: Spec, out: Path, workload: Workload, profiles: Profiles | None,
                 given: LiveCosts | None, *, resumed: bool) -> LiveCosts | None:
    """The machine calibration of this run, saved as OUT/calibration.json: a
    resumed run keeps its own; 'measure' calibrates this machine now; else the
    ``given`` one (``_given_calibration``)."""
    path = out / CALIBRATION_FILE
    if resumed:
        costs = LiveCosts.load(path) if path.exists() else None
    elif spec.get("calibration", "measure") == "measure":
        apps = sorted({j.application for j in workload.jobs})
        sys.stdout.write(f"calibrating this machine first ({', '.join(apps)}; about 3 "
                         "minutes; --calibration FILE reuses one)\n")
        bar = ProgressBar(total=quick_phases(apps), label="calibrate --quick", unit="phases")
        costs = quick_calibration(apps, path, profiles, tick=lambda note: bar.advance(1, note))
        bar.close()
    else:
        costs = given
        if costs is not None:
            costs.save(path)
    if costs is not None:
        costs = dataclasses.replace(costs, choice=spec.get("calibration", "measure"))
        sys.stdout.write(calibration_line(costs) + "\n")
    return costs


def _net_calibration(spec: Spec, out: Path, cluster: ClusterSpec) -> None:
    """The network the prediction charges on emulated nodes: --net-calibration
    FILE, else a short netbench now (K = 2..nodes at this run's bandwidth) into
    OUT/netbench/; recorded in live.json so a resumed run keeps it."""
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
        _record(out / RUN_FILE, spec)
    sys.stdout.write(f"network: {cal.describe()}\n")


def _overrides(items: Sequence[str], flag: str) -> dict[str, float]:
    """``TYPE=VALUE`` items as {type: value}; ValueError names a bad one."""
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


def _resume_spec(out: Path) -> Spec:
    path = out / RUN_FILE
    if not path.exists():
        raise ResumeError(f"{path}: not found; --resume takes the --out folder of a live run")
    # Runs recorded before an option existed ran with what is now its Pollux-study value.
    spec = {"bandwidth": 10.0, "latency": 50.0, "new_jobs": "one", "network": "loopback",
            "net_calibration": None, "kinds": None,
            "tiresias_threshold": str(16 * 3600.0), "power": -1.0, "preset": None,
            "efficiency_truth": "curves", **json.loads(path.read_text())}
    spec["out"] = str(out)
    return spec


def _record(path: Path, spec: Spec) -> None:
    """Write the spec's RUN_KEYS to ``path`` (live.json), atomically."""
    atomic_write_text(path, json.dumps({k: spec.get(k) for k in RUN_KEYS}, indent=1) + "\n")


def _profiles(spec: str) -> dict[str, AppProfile] | None:
    """The profiles (T_iso, ETAs, the prediction); optional for a live run."""
    if not Path(spec).exists():
        log.warning("%s: no profiles; no T_iso (fairness), ETAs, prediction or comparison",
                    spec)
        return None
    return load_profiles(spec)


def _run_policies(names: Sequence[str], workload: Workload, world: World,
                  settings: RunSettings, spec: Spec, live: LiveSettings, profiled: bool,
                  out: Path, *, resume: bool, compare: bool,
                  kinds: Mapping[str, NodeKind] | None = None) -> int:
    """Predict (unless resumed with a prediction), run each policy in turn
    (a finished one is skipped on resume), then judge the run."""
    costs = world.costs
    changed = bool(spec.get("targets") or spec.get("evals"))
    predictions = load_predictions(out) if resume else {}
    if profiled and not changed and not predictions:
        predictions = predict(world, workload, names, settings, out)
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
                    raise LiveRequestError(str(exc)) from exc
                summaries.append(json.loads((d / "summary.json").read_text()))
                continue
        pred = predictions.get(name)
        header = {"calibration": None if costs is None else {
                      **(calibration_provenance(costs) or {}), "copy": str(out / CALIBRATION_FILE),
                      "about": describe_calibration(costs)},
                  "prediction": None if pred is None else {"path": pred.path,
                                                           "digest": pred.digest}}
        summary = run_live(LivePlan(workload, name, settings, live, d, world, header,
                                    kinds=kinds or {}), resume=state)
        summaries.append(summary)
        if summary.get("interrupted"):
            sys.stderr.write(f"interrupted; continue with: coadapt live --resume {out}\n")
            return EXIT_INTERRUPTED
    write_comparison(summaries, out)
    baseline = spec.get("baseline") or "fixed"
    sys.stdout.write(format_table(summaries, f"LIVE: {workload.name} on {settings.cluster} "
                                  f"({len(workload.jobs)} jobs, real processes)",
                                  baseline=baseline, seed=spec.get("seed"),
                                  calibration=calibration_line(costs)) + "\n")
    if compare and profiled and changed:
        log.warning("no comparison: --target/--eval-every changed the live jobs, the "
                    "profiles describe the registry's")
    elif compare and profiled:
        result = judge(names, world, workload, settings, out)
        sys.stdout.write("\n" + result.text + "\n")
    try:  # the run is done and its logs are safe: a report that fails is rebuilt later
        report = write_run_report(out, baseline=baseline)
    except (OSError, ValueError) as exc:
        log.warning("report.md not written (%s); rebuild it with 'coadapt report %s'", exc, out)
        report = None
    sys.stdout.write(f"results in {out}/" + (f" (report: {report})" if report else "") + "\n")
    return 0
