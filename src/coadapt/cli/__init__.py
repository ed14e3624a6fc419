"""coadapt command line: one thin layer over the stages.

Each stage module registers its own subcommand; this file only wires them and
turns known input errors into a clear message and exit status 2. Commands are
imported lazily: ``coadapt --help`` and ``coadapt simulate --help`` load only
what they show (no numpy, no torch), so they answer at once.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import sys
from collections.abc import Sequence
from dataclasses import dataclass

from coadapt import __version__
from coadapt.cli.errors import fail


@dataclass(frozen=True)
class Command:
    """A subcommand: its name, the module whose ``register(sub)`` builds it,
    its one-line help, and whether it needs the ``live`` extra (torch)."""

    name: str
    module: str
    help: str
    live: bool = False


COMMANDS: tuple[Command, ...] = (
    Command("simulate", "coadapt.cli.simulate", "replay a workload under scheduling policies (simulated)"),
    Command("experiment", "coadapt.cli.experiment",
            "the scheduling study: policies x workload sets x seeds (simulated), with CIs and a report"),
    Command("live", "coadapt.cli.live", "run a workload with real processes and compare with sim",
            live=True),
    Command("calibrate", "coadapt.cli.calibrate", "measure live start/restart/validation/verify costs",
            live=True),
    Command("report", "coadapt.cli.report", "rebuild tables, figures and report.md from event logs"),
    Command("compare", "coadapt.cli.compare", "compare two runs' event logs job by job (e.g. sim vs live)"),
    Command("policies", "coadapt.cli.policies", "list every policy: its source and its options"),
    Command("workload", "coadapt.cli.workload", "generate workload files"),
    Command("profile", "coadapt.cli.profile", "measure job types over workers x batch sizes", live=True),
    Command("netbench", "coadapt.cli.net", "measure all-reduce between emulated nodes (root)", live=True),
    Command("net", "coadapt.cli.net", "emulated nodes: clean up what a killed run left (root)"),
    Command("job", "coadapt.jobs.commands", "run or verify one real training job", live=True),
)

LIVE_EXTRA = ("torch", "sklearn", "mnist1d")

EPILOG = """\
examples:
  coadapt simulate                                        # philly-small under every policy
  coadapt simulate --policy fixed,pollux --cluster 8x2 --out out/sim2
  coadapt report out/sim                                  # rebuild report.md and figures
  coadapt policies                                        # every policy and its options
  coadapt experiment --seeds 5 --parallel 2               # the study: sets x policies x seeds
  coadapt live --workload live-mixed-5 --policy pollux    # real processes, then sim vs live
  coadapt calibrate --quick                               # measure this machine's live costs

Commands marked [live] need the live extra (torch): pip install -e '.[live]'.
Each command's --help explains it and ends with examples.
"""


def _requested(argv: Sequence[str]) -> str | None:
    """The subcommand named in ``argv`` (the first word that is a command), if any."""
    names = {c.name for c in COMMANDS}
    return next((a for a in argv if a in names), None)


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The parser; with ``argv``, only the command it names is built in full
    (the others are listed with their one-line help), so --help is quick."""
    parser = argparse.ArgumentParser(
        prog="coadapt",
        description="Goodput-optimized (Pollux-style) scheduling of deep-learning training, "
        "measured on CPUs: profile real jobs, simulate workloads, compare policies.",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"coadapt {__version__}")
    parser.add_argument("-v", "--verbose", action="count", default=0,
                        help="more log output (-vv for debug)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    wanted = None if argv is None else _requested(argv)
    load = {c.module for c in COMMANDS if argv is None or c.name == wanted}
    for cmd in COMMANDS:
        if cmd.name in sub.choices:
            continue  # its module registered it with another command
        if cmd.module in load:
            importlib.import_module(cmd.module).register(sub)
        else:
            sub.add_parser(cmd.name, help=cmd.help + (" [live]" if cmd.live else ""))
    return parser


def subparser(parser: argparse.ArgumentParser, name: str) -> argparse.ArgumentParser:
    """The parser of subcommand ``name`` in ``parser``."""
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return action.choices[name]


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(argv)
    args = parser.parse_args(argv)
    level = [logging.WARNING, logging.INFO, logging.DEBUG][min(args.verbose, 2)]
    logging.basicConfig(level=level, format="%(levelname)s %(name)s: %(message)s")
    if getattr(args, "config", None):
        from coadapt.cli.config import ConfigError, apply_config

        try:
            apply_config(subparser(parser, args.command), args.config)
        except (ConfigError, OSError) as exc:
            return fail(args.command, str(exc))
        args = parser.parse_args(argv)  # the command line wins over the file
    try:
        return int(args.func(args) or 0)
    except ModuleNotFoundError as exc:
        if (exc.name or "").split(".")[0] not in LIVE_EXTRA:
            raise
        return fail(args.command, f"needs the live extra ({exc.name} is not installed): "
                    "pip install -e '.[live]' (or run it through make, e.g. 'make live', "
                    "which installs it)")
    except KeyboardInterrupt:
        return fail(args.command, "interrupted", code=130)
    except BrokenPipeError:  # the reader went away (`coadapt ... | head`): the results are on disk
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second error at exit
        return 141
    except (ValueError, OSError) as exc:  # bad input the command did not name itself
        if args.verbose >= 2:
            raise
        return fail(args.command, f"{exc} (run with -vv for the traceback)")
