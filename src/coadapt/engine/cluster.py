"""Cluster shape: nodes x slots per node."""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class ClusterSpec:
    slots_per_node: tuple[int, ...]

    @property
    def total_slots(self) -> int:
        return sum(self.slots_per_node)

    @property
    def num_nodes(self) -> int:
        return len(self.slots_per_node)

    def __str__(self) -> str:
        per = set(self.slots_per_node)
        if len(per) == 1:
            return f"{self.num_nodes}x{per.pop()}"
        return ",".join(map(str, self.slots_per_node))

    @classmethod
    def parse(cls, text: str) -> ClusterSpec:
        """``16x4`` (16 nodes of 4 slots) or ``4,4,2`` (slots per node)."""
        text = text.strip()
        m = re.fullmatch(r"(\d+)x(\d+)", text)
        if m:
            nodes, per = int(m.group(1)), int(m.group(2))
            if nodes < 1 or per < 1:
                raise ValueError(f"--cluster {text!r}: nodes and slots must be >= 1")
            return cls((per,) * nodes)
        if re.fullmatch(r"\d+(,\d+)*", text):
            slots = tuple(int(x) for x in text.split(","))
            if min(slots) < 1:
                raise ValueError(f"--cluster {text!r}: every node needs at least 1 slot")
            return cls(slots)
        raise ValueError(f"--cluster {text!r}: expected NODESxSLOTS (e.g. 16x4) or a list like 4,4,2")
