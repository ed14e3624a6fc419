"""``coadapt policies``: every policy, where it comes from and its options."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from coadapt.cli.errors import fail

DESCRIPTION = """\
List the policies simulate, live and experiment can run: each one's name, its
role (primary: one of 'all'; variant: run by name; plugin: loaded from a file,
a module or an installed distribution's entry point in group
'coadapt.policies'; oracle: reads the simulator's truth, so simulate and
experiment only), where it comes from, what it does, and the options it
declares with their types and defaults. Set an option in a run with
--policy-arg [POLICY.]KEY=VALUE (without POLICY. it applies to every chosen
policy that declares KEY). Writing your own: docs/writing-a-policy.md.
"""

EPILOG = """\
examples:
  coadapt policies                                  # every policy, its source and options
  coadapt policies --policy pollux,sia              # just these
  coadapt policies --policy docs/examples/shortest_first.py:ShortestFirst   # check a file's
"""


def register(sub: argparse._SubParsersAction) -> None:
    from coadapt.cli.vocab import ListAction

    p = sub.add_parser("policies", help="list every policy: its source and its options",
                       description=DESCRIPTION, epilog=EPILOG,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--policy", action=ListAction, default=[], metavar="NAME",
                   help="list only these: names, 'all', a file 'path/to/file.py:Class' or a "
                   "module 'package.module:Class' (loaded and checked); repeatable and comma "
                   "lists (default: every policy, installed plugins included)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from coadapt.policies import REGISTRY, policy_names
    from coadapt.policies.plugins import load_entry_points, resolve_policies

    broken = load_entry_points()
    try:
        names = resolve_policies(args.policy) if args.policy else \
            policy_names(variants=True, plugins=True)
    except ValueError as exc:
        return fail("policies", str(exc))
    order = {"primary": 0, "variant": 1, "plugin": 2}
    names = sorted(names, key=lambda n: (order[REGISTRY[n].role], n))
    sys.stdout.write("\n".join(_block(n) for n in names) + "\n")
    for message in broken.values():
        sys.stderr.write(f"coadapt policies: note: not loaded: {message}\n")
    return 0


def _block(name: str) -> str:
    from coadapt.policies import REGISTRY
    from coadapt.policies.plugins import description, options_of, variant_of

    entry = REGISTRY[name]
    role = entry.role + (", oracle" if entry.uses_oracle else "")
    lines = [f"{name}  [{role}]  {entry.source}"]
    text = description(entry)
    if text:
        lines.append(f"    {text}")
    options = options_of(name)
    if options and entry.switches:  # a variant: its base's options, its switches as defaults
        lines[-1] += f"; options as {variant_of(entry)}'s"
    elif options:
        lines.append(f"    options (--policy-arg {name}.KEY=VALUE):")
        width = max(len(o.name) for o in options)
        kinds = max(len(o.type_text) for o in options)
        for o in options:
            lines.append(f"      {o.name:<{width}}  {o.type_text:<{kinds}}  = "
                         f"{_shown(o.default):<6}  {o.help}".rstrip())
    return "\n".join(lines)


def _shown(value: Any) -> str:
    """A default as one would type it after KEY=."""
    if isinstance(value, bool) or value is None:
        return str(value).lower()
    return f"{value:g}" if isinstance(value, float) else str(value)
