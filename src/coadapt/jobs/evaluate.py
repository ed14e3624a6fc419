"""Loss and validation metric per task; shared by the workers and by verify."""

from __future__ import annotations

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn

from coadapt.jobs.data import Split


def train_loss(task: str, out: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Mean loss of one micro-batch (per sample, or per character for "lm")."""
    if task == "lm":
        return F.cross_entropy(out.reshape(-1, out.shape[-1]), y.reshape(-1))
    return F.cross_entropy(out, y)


def _sums(task: str, out: torch.Tensor, y: torch.Tensor) -> tuple[float, int]:
    if task == "lm":
        loss = F.cross_entropy(out.reshape(-1, out.shape[-1]), y.reshape(-1), reduction="sum")
        return float(loss), y.numel()
    return float((out.argmax(dim=1) == y).sum()), y.numel()


@torch.no_grad()
def evaluate(model: nn.Module, split: Split, task: str, *, rank: int = 0, world: int = 1,
             chunk: int = 256) -> float:
    """Validation metric: accuracy ("classify") or mean cross-entropy in nats per
    character ("lm"). With world > 1 each rank scores a contiguous shard and the
    sums are all-reduced, so every rank returns the same value."""
    n = len(split)
    lo, hi = n * rank // world, n * (rank + 1) // world
    total, count = 0.0, 0
    was_training = model.training
    model.eval()
    try:
        for a in range(lo, hi, chunk):
            b = min(hi, a + chunk)
            s, c = _sums(task, model(split.inputs[a:b]), split.targets[a:b])
            total += s
            count += c
    finally:
        model.train(was_training)
    if world > 1:
        vec = torch.tensor([total, float(count)], dtype=torch.float64)
        dist.all_reduce(vec)
        total, count = float(vec[0]), int(vec[1])
    return total / max(count, 1)
