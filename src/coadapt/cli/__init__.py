"""coadapt command line: one thin layer over the stages.

Each stage module registers its own subcommand; this file only wires them and
turns known input errors into a clear message and exit status 2.
"""

from __future__ import annotations

import argparse
import logging
from collections.abc import Sequence

from coadapt import __version__

EPILOG = """\
examples:
  coadapt simulate --workload philly-small --policy all
  coadapt experiment --seeds 5 --jobs 2                   # the study: sets x policies x seeds
  coadapt live --workload live-mixed --policy pollux      # real processes, then sim vs live
  coadapt calibrate                                       # measure live costs for the simulator
  coadapt netbench                                        # measure the network between emulated nodes
  coadapt simulate --workload ../shared/reference/adaptdl/workloads/workload-6.csv \\
      --profiles adaptdl:../shared/reference/adaptdl --policy pollux --cluster 16x4
  coadapt report out/sim
  coadapt profile --quick
  coadapt job run mlp-mnist1d --workers 2 --batch 128 --ckpt /tmp/ck
"""


def build_parser() -> argparse.ArgumentParser:
    from coadapt.cli import (
        calibrate,
        compare,
        experiment,
        live,
        net,
        profile,
        report,
        simulate,
        workload,
    )
    from coadapt.jobs import commands as job_commands

    parser = argparse.ArgumentParser(
        prog="coadapt",
        description="Goodput-optimized (Pollux-style) scheduling of deep-learning training, "
        "measured on CPUs: profile real jobs, simulate workloads, compare policies.",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"coadapt {__version__}")
    parser.add_argument("-v", "--verbose", action="count", default=0,
                        help="more log output (-vv for debug)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for module in (simulate, experiment, live, calibrate, report, compare, workload, profile,
                   net, job_commands):
        module.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    level = [logging.WARNING, logging.INFO, logging.DEBUG][min(args.verbose, 2)]
    logging.basicConfig(level=level, format="%(levelname)s %(name)s: %(message)s")
    return int(args.func(args) or 0)

