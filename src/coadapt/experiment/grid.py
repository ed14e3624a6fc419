"""The experiment's grid: which (network, workload, policy, seed) cells to run.

A cell is the unit of work, of parallelism and of resume: one simulated
replay of one workload under one policy. Its ``key`` names its log file and
its row, so a finished cell is never run twice and an interrupted grid
resumes where it stopped.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

# Source folders whose code decides a cell's numbers: a change in any of them
# makes earlier rows stale for ``--resume``.
RESULT_CODE = ("engine", "sim", "policies", "models", "workloads", "metrics", "profiles",
               "jobs/registry.py", "jobs/types.py", "eventlog", "experiment/runner.py",
               "experiment/grid.py")


def bandwidth_tag(gbps: float) -> str:
    return f"{gbps:g}gbps"


@dataclass(frozen=True, order=True)
class Cell:
    bandwidth: float  # Gbit/s between nodes (the declared network model)
    workload: str  # a named workload set, or the stem of a CSV workload
    policy: str
    seed: int

    @property
    def tag(self) -> str:
        return bandwidth_tag(self.bandwidth)

    @property
    def key(self) -> str:
        return f"{self.tag}__{self.workload}__{self.policy}__s{self.seed}"


def build_grid(bandwidths: Sequence[float], workloads: Sequence[str], policies: Sequence[str],
               seeds: Sequence[int], seeded: Mapping[str, bool]) -> list[Cell]:
    """Every combination, each once; a workload that seeds do not change (a
    CSV file) runs at its first seed only."""
    cells = {Cell(bw, w, p, s)
             for bw in bandwidths for w in workloads for p in policies
             for s in (seeds if seeded.get(w, True) else seeds[:1])}
    return sorted(cells)


def unique(items: Iterable[str]) -> list[str]:
    """Items in order, repeats dropped (``--policies pollux,pollux`` runs once)."""
    return list(dict.fromkeys(items))


def code_digest(root: Path) -> str:
    """Hash of the code that determines a cell's result (see ``RESULT_CODE``)."""
    h = hashlib.sha256()
    for part in RESULT_CODE:
        base = root / part
        files = sorted(base.rglob("*.py")) if base.is_dir() else [base]
        for f in files:
            if f.is_file():
                h.update(str(f.relative_to(root)).encode())
                h.update(f.read_bytes())
    return h.hexdigest()[:16]


def fingerprint(settings: Mapping[str, Any]) -> str:
    """A short stable hash of everything besides the cell that decides its row."""
    text = json.dumps(settings, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def describe(cell: Cell) -> dict[str, Any]:
    return {**asdict(cell), "tag": cell.tag, "key": cell.key}
