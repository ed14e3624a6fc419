"""``coadapt simulate``: replay a workload under one or all policies."""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path

from coadapt.cli.errors import fail

DESCRIPTION = """\
Replay a workload on a modeled cluster under each scheduling policy (SimPy
discrete-event simulation; every number it prints is SIMULATED). Jobs advance by
their profile: step time from the measured placements, gradient statistics and
validation metric from the measured training curves. Policies see only what the
jobs report. Writes OUT/<policy>/events.jsonl (the event log), jobs.csv and
summary.json, plus OUT/comparison.csv, and prints a comparison table. Each
log's header records its kind ('simulation', or 'replay' with --replay). OUT
must not hold a live run (a live.json, or a log whose header says "live"): it
is refused, and nothing in it is touched.

The Pollux study's options are one preset (flags given as well win):
  coadapt simulate --preset osdi21 --cluster 16x4 --profiles adaptdl:DIR ...
"""


def register(sub: argparse._SubParsersAction) -> None:
    from coadapt.policies import policy_names
    from coadapt.runs.options import add_options

    p = sub.add_parser("simulate", help="replay a workload under scheduling policies (simulated)",
                       description=DESCRIPTION,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--workload", default="philly-small",
                   help="workload CSV (name,time,application,num_replicas,batch_size) or the "
                   "name of one shipped in traces/ (default: philly-small)")
    p.add_argument("--profiles", default="profiles",
                   help="profiles: DIR or cpu:DIR (measured by 'coadapt profile'), or "
                   "adaptdl:DIR for the Pollux reference GPU traces (default: profiles)")
    p.add_argument("--policy", default="all",
                   help=f"one of {', '.join(policy_names())}, a comma list, or 'all' (default: "
                   f"those); variants, by name only: {', '.join(policy_names(primary=False, variants=True))}")
    add_options(p)
    p.add_argument("--out", default="out/sim", help="output folder (default out/sim)")
    p.add_argument("--live-costs", default="auto", metavar="auto|none|PATH",
                   help="charge the live costs measured by 'coadapt calibrate' (start, restart, "
                   "validation, verification, co-location) instead of the fixed restart delay: "
                   "'auto' (default) uses PROFILES/live-costs.json when it exists")
    p.add_argument("--replay", metavar="DIR", default=None,
                   help="replay the allocations recorded in DIR/<policy>/events.jsonl (a live "
                   "run) instead of letting the policy decide: what then differs from the "
                   "recording is the job model's error, not the policy's choices")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(func=run)


def holds_live_run(out: Path) -> str | None:
    """Why ``out`` holds a live run (its ``live.json``, or a log whose header
    says mode "live" or cannot be read), or None: a simulation writing there
    would replace it."""
    from coadapt.runs.simulate import live_log

    if (out / "live.json").exists():
        return f"{out / 'live.json'} exists"
    for path in [out / "events.jsonl", *sorted(out.glob("*/events.jsonl"))]:
        reason = live_log(path)
        if reason is not None:
            return reason
    return None


def run(args: argparse.Namespace) -> int:
    from coadapt.policies import REGISTRY, policy_names
    from coadapt.policies.replay import ReplayPolicy
    from coadapt.report.compare import write_comparison
    from coadapt.report.table import format_table
    from coadapt.runs.options import settings as run_settings
    from coadapt.runs.options import world_of
    from coadapt.runs.simulate import simulate_policy
    from coadapt.world.costs import CostError, resolve_costs
    from coadapt.world.profiles.profile import ProfileError
    from coadapt.world.profiles.sources import load_profiles
    from coadapt.world.workload import WorkloadError, load_workload

    out = Path(args.out)
    live = holds_live_run(out)
    if live is not None:
        return fail("simulate", f"--out {out}: holds a live run ({live}); a simulation would overwrite it. "
                     f"Nothing was changed; choose another --out (e.g. {out.parent / 'sim'})")
    names = policy_names() if args.policy == "all" else args.policy.split(",")
    if args.replay is not None:
        recorded = sorted(p.parent.name for p in Path(args.replay).glob("*/events.jsonl"))
        if not recorded:
            return fail("simulate", f"--replay {args.replay}: no <policy>/events.jsonl below it")
        names = recorded if args.policy == "all" else [n for n in names if n in recorded]
    unknown = [n for n in names if n not in REGISTRY]
    if unknown:
        return fail("simulate", f"--policy: unknown policy {', '.join(unknown)}; "
                     f"known: {', '.join(policy_names(variants=True))} or 'all'")
    try:
        profiles = load_profiles(args.profiles)
        workload = load_workload(args.workload, set(profiles))
        costs = resolve_costs(args.live_costs, args.profiles)
        if costs is not None:
            costs.require({j.application for j in workload.jobs})
        replays = {n: ReplayPolicy.from_log(Path(args.replay) / n / "events.jsonl")
                   for n in names} if args.replay else {}
        world = world_of(args, profiles, costs)  # built once: every policy runs in it
        settings = run_settings(args, world, workload, show_progress=not args.no_progress)
    except (ValueError, ProfileError, WorkloadError, CostError) as exc:
        return fail("simulate", str(exc))
    cluster = settings.cluster
    kind = "replay" if args.replay else "simulation"
    summaries = []
    for name in names:
        summaries.append(simulate_policy(world, workload, name, settings, out / name,
                                         replay=replays.get(name), kind=kind))
    write_comparison(summaries, out)
    preset = f", preset {args.preset}" if getattr(args, "preset", None) else ""
    sys.stdout.write(format_table(
        summaries, f"SIMULATED ({kind}): {workload.name} on {cluster} ({len(workload.jobs)} "
        f"jobs, profiles {args.profiles}{', live costs' if costs else ''}{preset}, "
        f"efficiency truth {settings.efficiency_truth}"
        f"{', replaying ' + args.replay if args.replay else ''})") + "\n")
    sys.stdout.write(f"results in {out}/\n")
    logging.getLogger(__name__).info("summaries: %s", json.dumps(summaries))
    return 0
