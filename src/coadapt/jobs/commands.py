"""``coadapt job ...``: run, verify and list the real CPU training jobs.

The top-level CLI calls ``register(subparsers)``; every handler takes the parsed
args and returns the exit code (0 ok, 1 job failed or target not verified,
2 bad input).
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

from coadapt.jobs.types import ConfigError

log = logging.getLogger(__name__)

RUN_HELP = """\
Train one job with K data-parallel worker processes (torch.distributed, gloo)
at batch size M = K x micro x (accum + 1); the LR follows AdaScale and
progress is counted in iterations at the job type's initial batch M0.

The job validates every eval_every progress and stops once its target is
reached; the final checkpoint is then re-evaluated in a fresh process (verify).
SIGTERM or Ctrl-C makes the group checkpoint at the next step and exit 0;
'--resume' continues it, with any worker count and batch size.
"""


def _int(value: str) -> int:
    try:
        return int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {value!r}") from None


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``job`` command and its subcommands to a top-level CLI."""
    job = subparsers.add_parser(
        "job", help="run, verify and list the real CPU training jobs",
        description="Real CPU training jobs (the workloads that profile and live runs use).",
        epilog="examples:\n  coadapt job list\n"
        "  coadapt job run mlp-mnist1d --workers 2 --batch 128 --ckpt /tmp/ck\n"
        "  coadapt job verify /tmp/ck\n", formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = job.add_subparsers(dest="job_command", metavar="{run,verify,list}", required=True)

    run = sub.add_parser("run", help="train a job with K worker processes", description=RUN_HELP,
                         formatter_class=argparse.RawDescriptionHelpFormatter)
    run.add_argument("type", help="job type name (see 'coadapt job list')")
    run.add_argument("--workers", "-k", type=_int, default=1,
                     help="number of worker processes, one per CPU core (default 1)")
    run.add_argument("--batch", "-b", type=_int, default=None,
                     help="total batch size M per optimizer step (default: the type's M0)")
    run.add_argument("--ckpt", type=Path, required=True,
                     help="checkpoint directory (also holds worker logs)")
    run.add_argument("--resume", action="store_true",
                     help="continue the job checkpointed in --ckpt (new K and M allowed)")
    run.add_argument("--events", type=Path, default=None,
                     help="append JSON-lines events (observation, validation, ...) to FILE")
    run.add_argument("--max-steps", type=_int, default=None,
                     help="stop (with a checkpoint) after N optimizer steps of this launch")
    run.add_argument("--seed", type=int, default=0,
                     help="seed of model init and data order (a resumed job keeps its own)")
    run.add_argument("--target", type=float, default=None,
                     help="override the type's validation target (e.g. for a quick test)")
    run.add_argument("--eval-every", type=float, default=None,
                     help="override the validation interval, in progress units")
    run.add_argument("--job-id", default=None, help="job name in events (default: the type)")
    run.add_argument("--no-verify", action="store_true",
                     help="skip the fresh-process re-evaluation at completion")
    run.add_argument("--timeout", type=float, default=None,
                     help="kill the group and fail after this many wall seconds")
    run.add_argument("--time-limit", type=float, default=None,
                     help="after this many wall seconds, checkpoint at the next step and stop "
                          "(exit 0, status time_limit; continue with --resume)")
    run.set_defaults(func=cmd_run)

    ver = sub.add_parser("verify", help="re-evaluate a checkpoint against its target",
                         description="Rebuild the checkpoint's model in this process, evaluate "
                         "it on the validation split and compare with the target. Exit 0 "
                         "if reached, 1 if not.")
    ver.add_argument("ckpt_dir", type=Path, help="checkpoint directory of a job")
    ver.add_argument("--target", type=float, default=None, help="override the target")
    ver.add_argument("--json", action="store_true", help="print the result as one JSON line")
    ver.set_defaults(func=cmd_verify)

    lst = sub.add_parser("list", help="table of job types, batch limits and targets",
                         description="List the job types with M0, batch-size limits, "
                         "metric and target.")
    lst.set_defaults(func=cmd_list)


def _bad_input(command: str, exc: ConfigError | str) -> int:
    sys.stderr.write(f"coadapt job {command}: error: {exc}\n")
    return 2


def cmd_run(args: argparse.Namespace) -> int:
    from coadapt.jobs.group import RunConfig, run_group
    from coadapt.jobs.registry import get_job_type

    try:
        job = get_job_type(args.type)
        cfg = RunConfig(
            job_type=job.name, workers=args.workers,
            batch_size=args.batch if args.batch is not None else job.limits.init_batch_size,
            ckpt_dir=args.ckpt, resume=args.resume, events=args.events, job_id=args.job_id,
            seed=args.seed, max_steps=args.max_steps, target=args.target,
            eval_every=args.eval_every, verify=not args.no_verify, timeout=args.timeout,
            stop_after=args.time_limit)
        if cfg.eval_every is not None and cfg.eval_every <= 0:
            raise ConfigError("eval-every", "must be positive")
        if cfg.stop_after is not None and cfg.stop_after <= 0:
            raise ConfigError("time-limit", "must be positive (seconds)")
        res = run_group(cfg)
    except ConfigError as exc:
        return _bad_input("run", exc)
    metric = "n/a" if res.metric is None else f"{res.metric:.4f}"
    verified = {True: " (verified)", False: " (NOT verified)", None: ""}[res.verified]
    sys.stdout.write(f"{res.status}: {job.metric} {metric}{verified}, step {res.step}, "
                     f"progress {res.progress:.1f}, {res.samples} samples, "
                     f"{res.wall_seconds:.1f} s{', ' + res.message if res.message else ''}\n")
    return res.exit_code


def cmd_verify(args: argparse.Namespace) -> int:
    from coadapt.jobs.verify import main as verify_main

    if not (args.ckpt_dir / "ckpt.pt").exists():
        return _bad_input("verify", f"ckpt_dir: no checkpoint (ckpt.pt) in {args.ckpt_dir}; "
                          "pass the --ckpt directory of a job run")
    argv = [str(args.ckpt_dir)] + (["--json"] if args.json else [])
    if args.target is not None:
        argv += ["--target", str(args.target)]
    return verify_main(argv)


def cmd_list(args: argparse.Namespace) -> int:
    from coadapt.jobs.registry import JOB_TYPES

    head = ("type", "family", "M0", "local bsz", "max M", "metric", "target", "eval every",
            "samples")
    rows = [head] + [
        (j.name, j.family, str(j.limits.init_batch_size),
         f"{j.limits.min_local_bsz}-{j.limits.max_local_bsz}", str(j.limits.max_batch_size),
         j.metric, f"{'>=' if j.higher_is_better else '<='}{j.target:g}",
         f"{j.eval_every:g}", str(j.dataset_size))
        for j in JOB_TYPES.values()]
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
    for r in rows:
        sys.stdout.write("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip()
                         + "\n")
    return 0
