"""What the commands that run the engine share on the command line: the
chosen policies (names, files, modules; 'all') with their options, and the
resolved settings written beside the results."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from coadapt.runs.settings import RunSettings


def policy_names_of(specs: Sequence[str], *, oracles: bool = True) -> list[str]:
    """The registered names of ``--policy`` values, in order, once each: 'all'
    is the policies under study; a file or module spec is loaded and
    registered. ValueError names an unknown one."""
    from coadapt.policies import resolve_policies

    names = resolve_policies(specs, oracles=oracles)
    if not names:
        raise ValueError("--policy: no policy given")
    return names


def policy_settings(settings: RunSettings, args: argparse.Namespace,
                    names: Sequence[str]) -> RunSettings:
    """``settings`` with the policies' ``--policy-arg`` options (checked against
    what the chosen policies declare) and the plugin files they come from."""
    return settings.for_policies(names, getattr(args, "policy_arg", None) or ())


def write_run_config(out: Path, args: argparse.Namespace, command: str) -> Path:
    """OUT/config.toml: the run's resolved options, which '--config' reruns."""
    from coadapt.cli import build_parser, subparser
    from coadapt.cli.config import write_config

    path = out / "config.toml"
    write_config(path, args, subparser(build_parser([command]), command))
    return path
