"""``coadapt experiment``: the scheduling study as one command."""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path
from typing import Any

from coadapt.cli.errors import fail

log = logging.getLogger(__name__)

DESCRIPTION = """\
Run the scheduling study: every policy on every workload set for several seeds
(and, with --bandwidth 1,10,100, for several networks between the simulated
nodes), in parallel; every number is SIMULATED. A named set (see 'coadapt
workload sets') is generated for each seed, its requests tuned at the step
times the simulator charges; a CSV workload runs once (once per seed with
--observation-noise, whose draws the seed decides).

Writes OUT/cells.jsonl (one row per finished cell, appended as it finishes),
OUT/logs/<cell>.jsonl.gz (each cell's event log), OUT/results.{parquet,csv}
(the tidy table), OUT/summary.csv (mean over seeds with bootstrap 95% CIs, and
ratios to fixed and dynamic paired by seed), OUT/goals.csv and OUT/report.md
with figures in OUT/figures/. Ctrl-C stops at once; --resume reruns only the
cells that did not finish (and those whose settings or code changed).
"""

DEFAULT_POLICIES = ("fixed", "dynamic", "pollux", "tiresias", "optimus-oracle")

EPILOG = """\
examples:
  coadapt experiment --seeds 5 --parallel 2                 # every named set, 5 policies
  coadapt experiment --workloads cpu-load4,cpu-burst --policy fixed,pollux,sia \\
      --cluster 4x2:native,4x2:legacy --seeds 3 --out out/exp-kinds
  coadapt experiment --config out/experiment/config.toml --out out/exp-again
  coadapt experiment --seeds 5 --out out/experiment --resume   # continue an interrupted one
"""


def register(sub: argparse._SubParsersAction) -> None:
    from coadapt.cli.vocab import (
        add_calibration,
        add_config,
        add_ownership,
        add_parallel,
        add_policy,
        deprecated,
    )
    from coadapt.runs.flags import add_options

    p = sub.add_parser("experiment", help="the scheduling study: policies x workload sets x "
                       "seeds (simulated), with CIs and a report", description=DESCRIPTION,
                       epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_config(p, "experiment")
    p.add_argument("--workloads", default="all", help="comma list of workload set names or "
                   "CSV paths; 'all' (default): every named set")
    add_policy(p, DEFAULT_POLICIES)
    deprecated(p, "--policies", "--policy")
    p.add_argument("--seeds", type=int, default=5, help="seeds 1..N per named set (default 5)")
    p.add_argument("--profiles", default="profiles", help="profiles: DIR, cpu:DIR or adaptdl:DIR")
    add_calibration(p, "reference")
    add_options(p, multi_bandwidth=True, seed=False)
    add_parallel(p)
    p.add_argument("--ray", metavar="ADDRESS|local", default=None,
                   help="run cells as Ray tasks on that cluster, or on a private local one "
                   "(needs the optional extra: pip install 'coadapt[ray]')")
    add_ownership(p, "out/experiment", resume="keep the finished cells in OUT that match these "
                  "settings, run the rest")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from coadapt.experiment.grid import build_grid, unique
    from coadapt.experiment.runner import CELL_SCRATCH
    from coadapt.util.outdir import Ownership, check_out_path, claim
    from coadapt.util.scratch import remove_stale

    try:
        check_out_path(Path(args.out))
        plan = _plan(args)
    except (ValueError, KeyError, OSError) as exc:
        return fail("experiment", str(exc).strip("'\""))
    ctx, workloads, policies, seeds, bandwidths = plan
    out = Path(args.out)
    # then the seed draws the noise (or the bootstrap's error)
    noisy = bool(ctx.options.get("observation_noise") or ctx.options.get("bootstrap_error"))
    cells = build_grid(bandwidths, workloads, unique(policies), seeds,
                       {w: noisy or w not in ctx.workloads for w in workloads})
    for left in remove_stale(CELL_SCRATCH):
        log.info("removed %s, left by a killed cell", left)
    try:
        with claim(out, "experiment", Ownership.of(args)):  # locked; earlier results refused
            return _execute(args, ctx, out, cells, (workloads, policies, seeds, bandwidths))
    except ValueError as exc:  # busy, or holds results
        return fail("experiment", str(exc))


def _execute(args: argparse.Namespace, ctx, out: Path, cells: list, grid: tuple) -> int:
    """Run the cells not yet done in OUT (held by this process), then file the results."""
    import os

    from coadapt.cli.runs import write_run_config
    from coadapt.experiment.ray_pool import RayUnavailable
    from coadapt.experiment.runner import finished, run_grid
    from coadapt.ui.progress import ProgressBar

    workloads, policies, seeds, bandwidths = grid
    done = finished(out, ctx.fingerprint) if args.resume else {}
    todo = [c for c in cells if c.key not in done]
    out.mkdir(parents=True, exist_ok=True)
    _write_plan(out, args, ctx.fingerprint, len(cells))
    write_run_config(out, args, "experiment")
    jobs = args.parallel or os.cpu_count() or 1
    sys.stderr.write(f"experiment: {len(cells)} cells ({len(done)} already done), "
                     f"{len(workloads)} workloads x {len(policies)} policies x {len(seeds)} seeds"
                     f"{' (CSV workloads: 1)' if ctx.workloads else ''}"
                     f" x {len(bandwidths)} networks; {jobs} at a time"
                     f"{' on Ray ' + args.ray if args.ray else ''}\n")
    bar = ProgressBar(total=len(todo), items=len(todo), label="experiment", unit="cells",
                      min_interval=10.0, enabled=not args.no_progress and bool(todo))

    def progress(cell, ok: bool) -> None:
        bar.advance(1, f"{cell.key}{'' if ok else ' FAILED'}")

    try:
        outcome = run_grid(todo, ctx, out, jobs=jobs, ray_address=args.ray, on_done=progress)
    except RayUnavailable as exc:
        return fail("experiment", str(exc))
    finally:
        bar.close()
    if outcome.interrupted:
        sys.stderr.write(f"experiment: interrupted; {len(outcome.rows)} cells filed this run. "
                         f"Continue with: coadapt experiment ... --out {out} --resume\n")
        return 130
    rows = [done[c.key] if c.key in done else None for c in cells]
    new = {r["key"]: r for r in outcome.rows}
    rows = [r if r is not None else new.get(c.key) for r, c in zip(rows, cells, strict=True)]
    _finish(out, [r for r in rows if r is not None], outcome.failed, baseline=args.baseline)
    if outcome.failed:
        for key, err in outcome.failed:
            sys.stderr.write(f"experiment: cell {key} failed: {err}\n")
        return fail("experiment", f"{len(outcome.failed)} cells failed (tracebacks above, run with -v for "
                     "more); fix the cause and rerun with --resume", code=1)
    return 0


def _plan(args: argparse.Namespace):
    """Validate every option once, in the driver, and load what the cells share."""
    from coadapt.cli.runs import policy_names_of
    from coadapt.experiment.grid import code_digest, fingerprint, unique
    from coadapt.experiment.runner import CellContext
    from coadapt.policies.plugins import plugin_specs, plugin_stamp, policy_options
    from coadapt.runs.options import settings as run_settings
    from coadapt.runs.options import world_of
    from coadapt.workloads.sets import SETS, make_workload
    from coadapt.world.costs import resolve_costs
    from coadapt.world.profiles.sources import load_profiles
    from coadapt.world.workload import load_workload

    if args.seeds < 1:
        raise ValueError("--seeds must be >= 1")
    if args.parallel is not None and args.parallel < 1:
        raise ValueError("--parallel must be >= 1")
    policies = policy_names_of(args.policy)
    policy_args = policy_options(args.policy_arg, policies)
    stamp = plugin_stamp(policies)
    names = list(SETS) if args.workloads == "all" else unique(
        w.strip() for w in args.workloads.split(",") if w.strip())
    if not names:
        raise ValueError("--workloads: no workload given; name sets (see 'coadapt workload "
                         "sets') or CSV paths, or 'all'")
    if not args.bandwidth:
        raise ValueError("--bandwidth: no network given; e.g. --bandwidth 1,10,100")
    profiles = load_profiles(args.profiles)
    costs = resolve_costs(args.calibration, args.profiles)
    fixed, workloads = {}, []
    for name in names:
        if name in SETS:
            workloads.append(name)
            continue
        wl = load_workload(name, set(profiles))  # a CSV: loaded here, shipped to every cell
        if wl.name in SETS or wl.name in fixed:
            raise ValueError(f"--workloads: {name}: its name {wl.name!r} is already taken by "
                             f"{'a named set' if wl.name in SETS else 'another CSV'}; rename "
                             "the file")
        fixed[wl.name] = wl
        workloads.append(wl.name)
    options = {k: getattr(args, k) for k in ("cluster", "latency", "interval", "restart_delay",
                                             "new_jobs", "tiresias_threshold", "power",
                                             "observation_noise", "efficiency_truth",
                                             "preset", "net_calibration", "kind_speeds",
                                             "bootstrap_error")}
    for bw in args.bandwidth:  # every option fails here, once, not in every cell
        spec = argparse.Namespace(**options, bandwidth=bw, seed=1)
        world = world_of(spec, profiles, costs)
        sample = fixed.get(workloads[0]) or make_workload(workloads[0], 1, world)
        run_settings(spec, world, sample, show_progress=False)
    root = Path(__file__).resolve().parents[1]
    fp = fingerprint({
        "options": options, "profiles": {a: p.source for a, p in sorted(profiles.items())},
        "profile_files": _profile_stamp(args.profiles), "costs": costs.meta if costs else None,
        "code": code_digest(root),
        "net_calibration": (Path(args.net_calibration).read_text()
                            if args.net_calibration else None),
        "csv": {n: [(j.name, j.submit_time, j.application, j.num_replicas, j.batch_size)
                    for j in w.jobs] for n, w in sorted(fixed.items())},
        # only when set, so the fingerprints of earlier studies (and --resume) still match
        **({"plugins": stamp, "policy_args": policy_args} if stamp or policy_args else {})})
    ctx = CellContext(profiles, costs, options, fixed, fp, plugins=plugin_specs(policies),
                      policy_args=policy_args)
    seeds = list(range(1, args.seeds + 1))
    return ctx, workloads, policies, seeds, sorted(set(args.bandwidth))


def _profile_stamp(spec: str) -> str:
    """Content hash of the profile folder's files, so a re-profile or a new
    calibration invalidates earlier rows."""
    import hashlib

    path = Path(spec.partition(":")[2] if ":" in spec else spec)
    h = hashlib.sha256()
    for f in sorted(path.rglob("*")):
        if f.is_file() and f.suffix in (".json", ".csv"):
            h.update(str(f.relative_to(path)).encode())
            h.update(f.read_bytes())
    return h.hexdigest()[:16]


def _write_plan(out: Path, args: argparse.Namespace, fp: str, cells: int) -> None:
    from coadapt.util.atomic import atomic_write_bytes

    plan: dict[str, Any] = {k: v for k, v in vars(args).items() if k != "func"}
    plan.update(fingerprint=fp, cells=cells, simulated=True)
    atomic_write_bytes(out / "experiment.json",
                       (json.dumps(plan, indent=2, default=str) + "\n").encode())


def _finish(out: Path, rows: list[dict[str, Any]],
            failed: list[tuple[str, str]] | None = None, *, baseline: str = "fixed") -> None:
    """The tidy table, summary, goals and report from the filed rows; the
    failed cells are named in the report and in failed.csv."""
    import polars as pl

    from coadapt.experiment.report import write_report
    from coadapt.experiment.stats import goals, summary
    from coadapt.experiment.text import format_summary

    results = pl.DataFrame(rows, infer_schema_length=None)
    results.write_parquet(out / "results.parquet")
    results.write_csv(out / "results.csv")
    summ = summary(results)
    summ.write_csv(out / "summary.csv")
    gl = goals(summ)
    gl.write_csv(out / "goals.csv")
    failed = failed or []
    pl.DataFrame({"key": [k for k, _ in failed], "error": [e for _, e in failed]},
                 schema={"key": pl.String, "error": pl.String}).write_csv(out / "failed.csv")
    report = write_report(out, results, summ, gl, failed=failed, baseline=baseline)
    sys.stdout.write(format_summary(summ, gl, baseline=baseline) + "\n")
    sys.stdout.write(f"results in {out}/ (report: {report})\n")
