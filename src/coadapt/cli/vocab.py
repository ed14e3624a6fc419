"""The command line's shared vocabulary: one name for one thing in every command.

``--policy`` (repeatable, comma lists), ``--policy-arg``, ``--baseline``,
``--calibration``, ``--parallel/-j``, ``--out/--force/--resume``, ``--config``; and old
spellings kept for now (:class:`Deprecated`) with a one-line notice. Standard
library only: every ``--help`` stays instant.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any


class Given(list):
    """A list typed on the command line (a default, or one from a spec file, is
    a plain list): the first flag of a parse replaces the default, later ones add."""


class ListAction(argparse.Action):
    """A repeatable option whose values may also be comma lists:
    ``--policy fixed,pollux --policy sia`` is [fixed, pollux, sia]."""

    def __init__(self, option_strings: Sequence[str], dest: str, split: bool = True,
                 **kwargs: Any) -> None:
        self.split = split
        super().__init__(option_strings, dest, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: Any, option_string: str | None = None) -> None:
        current = getattr(namespace, self.dest, None)
        items = Given(current if isinstance(current, Given) else [])
        parts = str(values).split(",") if self.split else [str(values)]
        items.extend(p.strip() for p in parts if p.strip())
        setattr(namespace, self.dest, items)


class Deprecated(argparse.Action):
    """An old spelling of option ``new``: says so in one line on stderr, then
    acts as ``new`` would (its type, choices and action)."""

    def __init__(self, option_strings: Sequence[str], dest: str, new: str = "",
                 **kwargs: Any) -> None:
        self.new = new
        super().__init__(option_strings, dest, help=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: Any, option_string: str | None = None) -> None:
        sys.stderr.write(f"coadapt: note: {option_string} is deprecated; use {self.new} "
                         "(the old spelling still works for now)\n")
        target = parser._option_string_actions[self.new]
        if isinstance(values, str) and target.type is not None and callable(target.type):
            values = target.type(values)
        target(parser, namespace, values, self.new)


def deprecated(p: argparse.ArgumentParser, old: str, new: str, *, flag: bool = False) -> None:
    """Accept ``old`` as a hidden, announced alias of the already added ``new``."""
    dest = p._option_string_actions[new].dest
    p.add_argument(old, action=Deprecated, new=new, dest=dest, nargs=0 if flag else None)


def add_policy(p: argparse.ArgumentParser, default: Sequence[str], what: str = "") -> None:
    """``--policy`` (repeatable, comma lists; 'all', a name, FILE.py:Class or
    module:Class), ``--policy-arg`` and ``--baseline``."""
    p.add_argument("--policy", action=ListAction, default=list(default), metavar="NAME",
                   help="a policy: a name (list them with 'coadapt policies'), 'all' (the "
                   "policies under study), a file 'path/to/file.py:Class' or a module "
                   "'package.module:Class'; repeatable and comma lists "
                   f"(default {','.join(default)}){what}")
    p.add_argument("--policy-arg", action=ListAction, split=False, default=[],
                   metavar="[POLICY.]KEY=VALUE",
                   help="set a policy's option, typed and checked against its declared options "
                   "('coadapt policies' lists them), e.g. pollux.p=-0.5; without POLICY. it "
                   "applies to every chosen policy that has the option; repeatable")
    p.add_argument("--baseline", default="fixed", metavar="POLICY",
                   help="the policy other policies are compared with (ratio columns; default "
                   "fixed; run it too)")


def add_calibration(p: argparse.ArgumentParser, default: str, *, live: bool = False) -> None:
    """``--calibration``: which machine calibration (live costs) the run charges;
    ``--live-costs`` is its old spelling."""
    measure = ("'measure' (default) runs 'coadapt calibrate --quick' here first; " if live else "")
    p.add_argument("--calibration", default=default,
                   metavar="reference|this|none|PATH" if not live else "measure|reference|this|PATH",
                   help="the machine calibration (live start, restart, validation, verification "
                   f"and co-location costs) the run charges: {measure}'reference'"
                   f"{' (default)' if default == 'reference' else ''}: the shipped one, measured "
                   "on a named reference machine (profiles/live-costs.json); 'this': this "
                   "machine's newest from 'coadapt calibrate'; 'none': a fixed restart delay "
                   "only; or a calibration file. The one used is named in the table, the "
                   "report and the log")
    deprecated(p, "--live-costs", "--calibration")


def add_parallel(p: argparse.ArgumentParser) -> None:
    """``--parallel/-j``: processes at once (``--jobs`` is its old spelling)."""
    p.add_argument("-j", "--parallel", type=int, default=None, metavar="N",
                   help="processes (cells) run at once (default: the machine's cores)")
    deprecated(p, "--jobs", "--parallel")


def add_config(p: argparse.ArgumentParser, command: str) -> None:
    """``--config FILE``: the command's options from a TOML spec file."""
    p.add_argument("--config", default=None, metavar="FILE",
                   help="read options from a TOML spec file whose keys are this command's long "
                   "option names (e.g. workload = \"philly-small\", policy = [\"fixed\", "
                   "\"pollux\"]); flags given as well win; the resolved settings are written "
                   f"to OUT/config.toml, and 'coadapt {command} --config OUT/config.toml' "
                   "reruns them (docs/spec-files.md)")


def add_ownership(p: argparse.ArgumentParser, out_default: str | None, *,
                  resume: str | bool | None = None) -> None:
    """``--out`` with ``--force`` (and ``--resume`` when the command can finish
    a run): the same three words wherever a command writes a folder. ``resume``
    is its help; True where the command defines its own; None where it cannot
    resume."""
    shown = f" (default {out_default})" if out_default else ""
    p.add_argument("--out", default=out_default, metavar="DIR",
                   help=f"output folder{shown}; it must be new or empty: one that holds "
                   "results is refused unless --force" + (" or --resume" if resume else ""))
    p.add_argument("--force", action="store_true",
                   help="replace what OUT holds (a coadapt run's folder only; files coadapt "
                   "did not write are never deleted)")
    if isinstance(resume, str):
        p.add_argument("--resume", action="store_true", help=resume)
