"""``coadapt live``: run a job set with real processes under each policy, then
simulate the same workload and compare (``--no-compare`` skips that).

The options and their help only; the workflow is :mod:`coadapt.runs.live.workflow`."""

from __future__ import annotations

import argparse

from coadapt.cli.errors import fail

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
'coadapt live --out OUT --resume' (the downtime counts in no JCT).
"""

EPILOG = """\
examples:
  coadapt live                                   # live-mixed-5 under pollux on this machine, compare
  coadapt live --calibration out/live/calibration.json --out out/live2   # reuse a calibration
  coadapt live --workload live-burst --policy all --out out/live-burst
  coadapt live --out out/live --resume           # continue an interrupted run
  coadapt live --cluster 2x1 --network emulated --bandwidth 0.1 --workload live-net-a \\
      --policy all --out out/live-net   # two emulated nodes, a 100 Mbit/s link each
"""

def register(sub: argparse._SubParsersAction) -> None:
    import os

    from coadapt.cli.vocab import add_calibration, add_ownership, add_policy
    from coadapt.runs.flags import add_options

    p = sub.add_parser("live", help="run a workload with real processes and compare with sim",
                       description=DESCRIPTION, epilog=EPILOG,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--workload", default="live-mixed-5",
                   help="workload CSV or the name of one in traces/ (default live-mixed-5, "
                   "about 3 minutes a policy here; longer: live-mixed, live-burst, "
                   "live-poorbatch)")
    add_policy(p, ["pollux"], "; 'all' here leaves out the oracles, which need ground truth")
    add_options(p, cluster=f"1x{os.cpu_count() or 1}")
    p.add_argument("--profiles", default="profiles",
                   help="profiles folder: T_iso for fairness, ETAs, measured costs (live-costs.json) "
                   "and the comparison simulation (default profiles)")
    add_ownership(p, "out/live", resume=True)
    add_calibration(p, "measure", live=True)
    p.add_argument("--network", choices=("loopback", "emulated"), default="loopback",
                   help="between nodes: 'loopback' (default; every node on this machine's "
                   "loopback, nothing shaped) or 'emulated': each node a network namespace "
                   "on its own cores behind a switch, its link shaped to --bandwidth with tc "
                   "(needs root). Emulated runs measure the network first (a short 'coadapt "
                   "netbench' into OUT/netbench/) unless --net-calibration FILE is given")
    p.add_argument("--resume", nargs="?", const=True, default=False, metavar="",
                   help="continue the interrupted run in --out (its other options are taken "
                   "from it)")
    p.add_argument("--no-compare", action="store_true",
                   help="do not simulate the workload and compare afterwards")
    p.add_argument("--no-status", action="store_true", help="no live status table")
    p.add_argument("--target", action="append", default=[], metavar="TYPE=VALUE",
                   help="override a job type's validation target (repeatable; e.g. a quick "
                   "smoke run: --target mlp-mnist1d=0.5)")
    p.add_argument("--eval-every", action="append", default=[], metavar="TYPE=PROGRESS",
                   help="override a job type's validation interval (repeatable)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import sys

    from coadapt.runs.live.workflow import Invocation, LiveRequestError, live_spec, run_workflow

    if isinstance(args.resume, str):  # the old spelling: --resume DIR
        sys.stderr.write("coadapt: note: --resume DIR is deprecated; use --out DIR --resume "
                         "(the old spelling still works for now)\n")
        args.out = args.resume
    args.resume = args.out if args.resume else None
    invocation = Invocation(resumed=bool(args.resume), status=not args.no_status,
                            compare=not args.no_compare,
                            observation_noise=getattr(args, "observation_noise", 0.0))
    try:
        return run_workflow(live_spec(args), invocation)
    except LiveRequestError as exc:
        return fail("live", str(exc))
