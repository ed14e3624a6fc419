"""The one order policies are listed in, in every table and figure.

The baseline first (what the ratio column divides by), then the registered
policies in ``policy_order()``: the two baselines (fixed, dynamic), the other
primary policies alphabetically, the registered variants (Pollux's ablation
halves and sweeps), Pollux last, where the eye ends; then anything
unregistered (a ``file.py:Class`` policy) by name. A fixed order, not a sort
by result, so two reports read side by side list the same rows in the same
places.
"""

from __future__ import annotations

from collections.abc import Iterable

BASELINES = ("fixed", "dynamic")  # listed first among the registered policies
LAST = "pollux"  # the policy the study is about reads last


def policy_order() -> list[str]:
    """Every registered policy, in table order (no baseline moved first)."""
    from coadapt.policies import PRIMARY, policy_names

    head = [p for p in BASELINES if p in PRIMARY]
    others = sorted(p for p in PRIMARY if p not in head and p != LAST)
    variants = policy_names(primary=False, variants=True)
    return head + others + variants + ([LAST] if LAST in PRIMARY else [])


def ordered_policies(names: Iterable[str], baseline: str | None = None) -> list[str]:
    """``names`` once each: ``baseline`` first when present, then in
    ``policy_order()``, then unregistered names alphabetically."""
    ranks = {p: i for i, p in enumerate(policy_order())}
    unique = set(names)
    rest = sorted(unique - {baseline}, key=lambda p: (ranks.get(p, len(ranks)), p))
    return ([baseline] if baseline in unique else []) + rest
