"""Paths into a JSON document and edits at them, for the fuzz tests that
mutate the shipped calibration and profile files."""

from __future__ import annotations

from typing import Any


def node_paths(node: Any, at: tuple = (), list_cap: int | None = None) -> list[tuple]:
    """Every node below ``node`` (containers too), as key/index paths; only
    the first ``list_cap`` items of each list, when given."""
    out = [at] if at else []
    if isinstance(node, dict):
        for k, v in node.items():
            out += node_paths(v, (*at, k), list_cap)
    elif isinstance(node, list):
        for i, v in enumerate(node[:list_cap]):
            out += node_paths(v, (*at, i), list_cap)
    return out


def parent_of(doc: Any, path: tuple) -> Any | None:
    """The container holding ``path``'s last key, or None when an earlier
    edit took the path away."""
    parent = doc
    try:
        for k in path[:-1]:
            parent = parent[k]
        parent[path[-1]]  # noqa: B018 (the path must still exist)
    except (KeyError, IndexError, TypeError):
        return None
    return parent
