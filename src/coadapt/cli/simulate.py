"""``coadapt simulate``: replay a workload under one or all policies."""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from coadapt.cli.errors import fail
from coadapt.eventlog import log_in, logs_below

DESCRIPTION = """\
Replay a workload on a modeled cluster under each scheduling policy (SimPy
discrete-event simulation; every number it prints is SIMULATED). Jobs advance by
their profile: step time from the measured placements, gradient statistics and
validation metric from the measured training curves. Policies see only what the
jobs report. Writes OUT/<policy>/events.jsonl (the event log), jobs.csv and
summary.json, plus OUT/comparison.csv, OUT/report.md (the table, settings,
calibration and figures, explained), OUT/figures/ and OUT/config.toml (the
resolved settings: rerun with --config), and prints a comparison table. Each
log's header records its kind ('simulation', or 'replay' with --replay). OUT
must not hold a live run (a live.json, or a log whose header says "live"): it
is refused, and nothing in it is touched.

The Pollux study's options are one preset (flags given as well win):
  coadapt simulate --preset osdi21 --cluster 16x4 --profiles adaptdl:DIR ...
"""


EPILOG = """\
examples:
  coadapt simulate                                    # philly-small, every policy, 8x2
  coadapt simulate --policy fixed,pollux --out out/sim-two
  coadapt simulate --policy fixed,pollux --policy-arg pollux.p=-0.5 --out out/sim-p
  coadapt simulate --policy fixed --policy docs/examples/shortest_first.py:ShortestFirst \\
      --out out/sim-plugin                            # a policy from a file
  coadapt calibrate --quick --cluster 1x1:native,1x1:legacy   # kinds of node: measure them, then
  coadapt simulate --workload cpu-burst --cluster 4x2:native,4x2:legacy --policy fixed,sia,gavel \\
      --out out/sim-kinds
  coadapt simulate --config out/sim/config.toml --out out/sim-again   # rerun a run's settings
  coadapt simulate --preset osdi21 --cluster 16x4 --policy fixed,pollux \\
      --workload ../shared/reference/adaptdl/workloads/workload-6.csv \\
      --profiles adaptdl:../shared/reference/adaptdl --out out/osdi21
"""


def register(sub: argparse._SubParsersAction) -> None:
    from coadapt.cli.vocab import add_calibration, add_config, add_ownership, add_policy
    from coadapt.runs.flags import add_options

    p = sub.add_parser("simulate", help="replay a workload under scheduling policies (simulated)",
                       description=DESCRIPTION, epilog=EPILOG,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    add_config(p, "simulate")
    p.add_argument("--workload", default="philly-small",
                   help="workload CSV (name,time,application,num_replicas,batch_size) or the "
                   "name of one shipped in traces/ (default: philly-small)")
    p.add_argument("--profiles", default="profiles",
                   help="profiles: DIR or cpu:DIR (measured by 'coadapt profile'), adaptdl:DIR "
                   "for the Pollux reference GPU traces, sia:DIR for Sia's (default: profiles)")
    add_policy(p, ["all"])
    add_options(p)
    add_ownership(p, "out/sim", resume="finish the run in OUT: keep its complete policies, "
                  "run the rest (the settings must be the ones in OUT/config.toml)")
    add_calibration(p, "reference")
    p.add_argument("--replay", metavar="DIR", default=None,
                   help="replay the allocations recorded in DIR/<policy>/events.jsonl (a live "
                   "run) instead of letting the policy decide: what then differs from the "
                   "recording is the job model's error, not the policy's choices")
    p.add_argument("--no-plots", action="store_true", help="no figures in OUT/figures/")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(func=run)


def holds_live_run(out: Path) -> str | None:
    """Why ``out`` holds a live run (its ``live.json``, or a log whose header
    says mode "live" or cannot be read), or None: a simulation writing there
    would replace it."""
    from coadapt.runs.simulate import live_log

    if (out / "live.json").exists():
        return f"{out / 'live.json'} exists"
    for path in [log_in(out), *logs_below(out)]:
        reason = live_log(path)
        if reason is not None:
            return reason
    return None


def run(args: argparse.Namespace) -> int:
    from coadapt.cli.runs import changed_settings, policy_names_of, policy_settings, write_run_config
    from coadapt.policies.replay import ReplayPolicy
    from coadapt.report.compare import write_comparison
    from coadapt.report.table import format_table
    from coadapt.runs.options import settings as run_settings
    from coadapt.runs.options import world_of
    from coadapt.runs.simulate import simulate_policy
    from coadapt.util.outdir import Ownership, check_out_path, claim
    from coadapt.world.costs import CostError, calibration_line, resolve_costs
    from coadapt.world.profiles.profile import ProfileError
    from coadapt.world.profiles.sources import load_profiles
    from coadapt.world.workload import WorkloadError, load_workload

    out = Path(args.out)
    live = None if args.force else holds_live_run(out)
    if live is not None:
        return fail("simulate", f"--out {out}: holds a live run ({live}); a simulation would overwrite it. "
                     f"Nothing was changed; choose another --out (e.g. {out.parent / 'sim'})")
    try:  # every option and input is checked before OUT is touched
        check_out_path(out)
        names = policy_names_of(args.policy)
        if args.replay is not None:
            recorded = [p.parent.name for p in logs_below(args.replay)]
            if not recorded:
                raise ValueError(f"--replay {args.replay}: no <policy>/events.jsonl below it")
            names = recorded if args.policy == ["all"] else [n for n in names if n in recorded]
        profiles = load_profiles(args.profiles)
        workload = load_workload(args.workload, set(profiles))
        costs = resolve_costs(args.calibration, args.profiles)
        if costs is not None:
            costs.require({j.application for j in workload.jobs})
        replays = {n: ReplayPolicy.from_log(log_in(Path(args.replay) / n), workload)
                   for n in names} if args.replay else {}
        world = world_of(args, profiles, costs)  # built once: every policy runs in it
        settings = policy_settings(run_settings(args, world, workload,
                                                show_progress=not args.no_progress), args, names)
        if args.resume:
            changed_settings(out, args, "simulate")
    except (ValueError, KeyError, ProfileError, WorkloadError, CostError) as exc:
        return fail("simulate", str(exc).strip("'\""))
    kind = "replay" if args.replay else "simulation"
    try:
        with claim(out, "simulate", Ownership.of(args)):  # locked: a second run is refused
            write_run_config(out, args, "simulate")
            summaries, kept = _run_policies(names, out, args.resume, lambda name, tmp: simulate_policy(
                world, workload, name, settings, tmp, replay=replays.get(name), kind=kind))
            write_comparison(summaries, out, plots=False)
            report = _report(out, args)
    except ValueError as exc:  # the folder is busy or holds results
        return fail("simulate", str(exc))
    if kept:
        sys.stderr.write(f"simulate: --resume kept the finished {', '.join(kept)} in {out}\n")
    preset = f", preset {args.preset}" if getattr(args, "preset", None) else ""
    sys.stdout.write(format_table(
        summaries, f"SIMULATED ({kind}): {workload.name} on {settings.cluster} ({len(workload.jobs)} "
        f"jobs, profiles {args.profiles}{preset}, efficiency truth {settings.efficiency_truth}"
        f"{', replaying ' + args.replay if args.replay else ''})", baseline=args.baseline,
        calibration=calibration_line(costs), seed=settings.seed) + "\n")
    sys.stdout.write(f"results in {out}/ (report: {report}; rerun: coadapt simulate --config "
                     f"{out / 'config.toml'})\n")
    logging.getLogger(__name__).info("summaries: %s", json.dumps(summaries))
    return 0


def _run_policies(names: list[str], out: Path, resume: bool,
                  simulate: Callable[[str, Path], dict[str, Any]]) -> tuple[list[dict], list[str]]:
    """Each policy's summary, simulating into OUT/.partial/NAME and renamed to
    OUT/NAME when it completes (a killed run leaves no half-written policy in
    place); with ``resume``, a policy already complete in OUT is kept."""
    from coadapt.util.outdir import staged

    summaries, kept = [], []
    for name in names:
        done = out / name / "summary.json"
        if resume and done.is_file():
            summaries.append(json.loads(done.read_text()))
            kept.append(name)
            continue
        with staged(out / name) as tmp:
            summaries.append(simulate(name, tmp))
    return summaries, kept


def _report(out: Path, args: argparse.Namespace) -> Path:
    from coadapt.report.markdown import write_run_report

    return write_run_report(out, baseline=args.baseline, plots=not args.no_plots)
