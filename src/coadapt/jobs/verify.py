"""Independent completion check: re-evaluate a checkpoint on the validation split.

Run in a fresh process (``python -m coadapt.jobs.verify DIR [--json]``) so the
result depends only on what is on disk: the model is rebuilt from the job type
named in the checkpoint, its weights loaded, and the metric recomputed.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

from coadapt.jobs.checkpoint import CheckpointError, load_checkpoint


@dataclass(frozen=True)
class VerifyResult:
    ckpt_dir: str
    job_type: str
    metric_name: str
    metric: float
    target: float
    higher_is_better: bool
    reached: bool
    progress: float
    samples: int
    step: int


def verify(ckpt_dir: str | Path, target: float | None = None) -> VerifyResult:
    """Evaluate the checkpoint's model; ``target`` overrides the one it was run with."""
    import torch

    from coadapt.jobs.evaluate import evaluate
    from coadapt.jobs.registry import get_job_type

    torch.set_num_threads(1)
    ckpt = load_checkpoint(ckpt_dir)
    if ckpt is None:
        raise FileNotFoundError(f"no checkpoint in {ckpt_dir}")
    job = get_job_type(ckpt["job_type"])
    goal = float(ckpt["target"]) if target is None else target
    model = job.build_model()
    model.load_state_dict(ckpt["model"])
    metric = evaluate(model, job.load_data().val, job.task)
    return VerifyResult(ckpt_dir=str(ckpt_dir), job_type=job.name, metric_name=job.metric,
                        metric=metric, target=goal, higher_is_better=job.higher_is_better,
                        reached=job.reached(metric, goal), progress=float(ckpt["progress"]),
                        samples=int(ckpt["samples"]), step=int(ckpt["step"]))


def describe(res: VerifyResult) -> str:
    cmp = ">=" if res.higher_is_better else "<="
    verdict = "REACHED" if res.reached else "NOT reached"
    return (f"{res.job_type}: {res.metric_name} {res.metric:.4f} {cmp} {res.target:g}? "
            f"{verdict} (step {res.step}, progress {res.progress:.1f}, "
            f"{res.samples} samples)\n")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m coadapt.jobs.verify",
                                 description="Re-evaluate a job checkpoint against its target.")
    ap.add_argument("ckpt_dir", type=Path)
    ap.add_argument("--json", action="store_true", help="print the result as one JSON line")
    ap.add_argument("--target", type=float, default=None, help="override the target")
    args = ap.parse_args(argv)
    try:
        res = verify(args.ckpt_dir, args.target)
    except CheckpointError as exc:  # exit 1 means "target not reached": bad input is 2
        sys.stderr.write(f"coadapt job verify: error: {exc}\n")
        return 2
    sys.stdout.write(json.dumps(asdict(res)) + "\n" if args.json else describe(res))
    return 0 if res.reached else 1


if __name__ == "__main__":
    sys.exit(main())
