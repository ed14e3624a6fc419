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


def changed_settings(out: Path, args: argparse.Namespace, command: str) -> None:
    """For ``--resume``: ValueError unless ``args`` resolve to the settings in
    OUT/config.toml (the results kept and the ones added must be one run's)."""
    import tomllib

    from coadapt.cli import build_parser, subparser
    from coadapt.cli.config import spec_of

    path = out / "config.toml"
    if not path.is_file():
        from coadapt.util.outdir import held_results

        if held_results(out):
            raise ValueError(f"--resume: {path} not found, so what {out} holds cannot be "
                             f"checked to be this run's; use --force to replace it")
        return  # nothing to resume: the run starts afresh
    try:
        before = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ValueError(f"--resume: {path}: unreadable ({exc}); use --force to replace "
                         f"{out}") from exc
    now = spec_of(args, subparser(build_parser([command]), command))
    skip = {"out", "no-plots", "policy", "baseline"}  # adding a policy to a run is resuming it
    diff = sorted(k for k in set(before) | set(now) if k not in skip and before.get(k) != now.get(k))
    if diff:
        shown = "; ".join(f"--{k}: {before.get(k, '(unset)')!r} there, {now.get(k, '(unset)')!r} "
                          "now" for k in diff[:3])
        raise ValueError(f"--resume: {out} was run with other settings ({shown}); resume with "
                         f"'coadapt {command} --config {path} --resume', or use --force")
