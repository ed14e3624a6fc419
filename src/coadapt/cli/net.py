"""``coadapt netbench`` and ``coadapt net cleanup``: the measured network."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from coadapt.cli.errors import fail

NETBENCH_HELP = """\
Measure ring all-reduce between emulated nodes on this machine: K processes
(one per node, each a network namespace behind a software switch, node i
pinned to core i mod cores) run real gloo all-reduces of each job type's
gradient size and of 64 KiB-8 MiB, with every node's link shaped by tc tbf to
each --bandwidth ('none' leaves it unshaped). Per bandwidth, the ring model
t = c + 2(K-1) a + 2(K-1)/K n 8/(e B) is fitted to the points that were not
CPU-bound; points where K ranks used more than half the cores they had (or an
unshaped link) measure the CPU, not the network, and stay out of the fit.

Writes OUT/netbench.csv (every point, with the declared formula's and the
fit's prediction), OUT/netbench.png and OUT/network.json: the network
calibration that 'coadapt simulate/experiment/live --net-calibration
OUT/network.json' use instead of the declared network. Needs root
(CAP_NET_ADMIN); takes about 4 minutes with the defaults.
"""


def _bandwidths(text: str) -> tuple[float | None, ...]:
    out: list[float | None] = []
    for part in text.split(","):
        part = part.strip().lower()
        if part in ("none", "unshaped"):
            out.append(None)
            continue
        try:
            v = float(part)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected Gbit/s numbers or 'none', got {part!r}"
                                             ) from None
        if not v > 0:
            raise argparse.ArgumentTypeError(f"bandwidth must be > 0 Gbit/s, got {v:g}")
        out.append(v)
    return tuple(out)


def _ks(text: str) -> tuple[int, ...]:
    try:
        ks = tuple(int(x) for x in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected process counts like 2,4,8, got {text!r}"
                                         ) from None
    if min(ks) < 2 or max(ks) > 16:
        raise argparse.ArgumentTypeError(f"process counts must be 2..16, got {text!r}")
    return ks


def register(sub: argparse._SubParsersAction) -> None:
    from coadapt.cli.vocab import add_ownership

    p = sub.add_parser("netbench", help="measure all-reduce between emulated nodes (network "
                       "calibration)", description=NETBENCH_HELP,
                       formatter_class=argparse.RawDescriptionHelpFormatter,
                       epilog="examples (root):\n  coadapt netbench                        "
                       "# ~6 min: 2..8 nodes at 0.1, 1 Gbit/s and unshaped\n"
                       "  coadapt netbench --k 2,4 --bandwidth 1 --reps 3 --out out/netbench-quick\n"
                       "  coadapt netbench --refit --out out/netbench   # refit an earlier run\n")
    add_ownership(p, "out/netbench")
    p.add_argument("--k", type=_ks, default=(2, 3, 4, 5, 6, 7, 8), metavar="K[,...]",
                   help="processes (nodes) per round (default 2,...,8)")
    p.add_argument("--bandwidth", type=_bandwidths, default=(0.1, 1.0, None), metavar="GBIT_S",
                   help="link bandwidths, 'none' unshaped (default 0.1,1,none)")
    p.add_argument("--reps", type=int, default=7, help="timed all-reduces per point (default 7)")
    p.add_argument("--latency", type=float, default=50.0, metavar="US",
                   help="the declared per-hop latency to compare with (default 50)")
    p.add_argument("--refit", action="store_true",
                   help="measure nothing: refit OUT/netbench.csv of an earlier run")
    p.set_defaults(func=run_netbench_cmd)

    n = sub.add_parser("net", help="emulated nodes: clean up what a killed run left",
                       epilog="examples (root):\n  coadapt net cleanup\n  coadapt net cleanup --all\n",
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    nsub = n.add_subparsers(dest="net_command", metavar="ACTION", required=True)
    c = nsub.add_parser("cleanup", help="kill namespace holders whose run is gone",
                        description="Emulated nodes vanish with their holder processes, which "
                        "die with the run (PDEATHSIG). This kills holders left behind anyway "
                        "(parent gone); --all also those of runs still going.")
    c.add_argument("--all", action="store_true", help="also holders of live runs")
    c.set_defaults(func=run_cleanup)


def run_netbench_cmd(args: argparse.Namespace) -> int:
    from coadapt.backends.live.nodes import missing_capability
    from coadapt.util.outdir import Ownership, check_out_path, claim

    out = Path(args.out)
    try:
        check_out_path(out)
        reason = None if args.refit else missing_capability()
        if reason is not None:
            raise ValueError(reason)
        if args.refit and not (out / "netbench.csv").is_file():
            raise ValueError(f"--refit: {out / 'netbench.csv'} not found; run 'coadapt netbench "
                             f"--out {out}' first")
        if args.reps < 3:
            raise ValueError("--reps must be at least 3 (the median and spread need them)")
        # --refit rewrites an earlier run's fit in place: it finishes that run
        with claim(out, "netbench", Ownership(force=args.force, resume=args.refit)):
            return _netbench(args, out)
    except ValueError as exc:  # bad input, or OUT busy or holding results
        return fail("netbench", str(exc))


def _netbench(args: argparse.Namespace, out: Path) -> int:
    from coadapt.tools.netbench.bench import BenchPlan, fit_table, run_netbench, save
    from coadapt.tools.netbench.report import plot, summary_table, text_table
    from coadapt.ui.progress import ProgressBar

    t0 = time.monotonic()
    if args.refit:
        points = _points(out / "netbench.csv")
        if isinstance(points, str):
            return fail("netbench", points)
    else:
        plan = BenchPlan(ks=args.k, bandwidths=args.bandwidth, reps=args.reps)
        bar = ProgressBar(total=plan.rounds(), label="netbench", unit="rounds")
        points = run_netbench(plan, out, tick=lambda note: bar.advance(1, note))
        bar.close()
    cal, table = fit_table(points, args.latency)
    path = save(cal, table, out)
    plot(table, out / "netbench.png")
    sys.stdout.write(text_table(summary_table(table)) + "\n\n")
    if cal is None:
        sys.stdout.write("no bandwidth had 3 network-bound points: no calibration written\n")
    else:
        for f in cal.fits:
            sys.stdout.write(
                f"fit {f.bandwidth_gbps:g} Gbit/s: overhead {f.overhead_us:.0f} ± "
                f"{f.se_overhead_us:.0f} us, latency {f.latency_us:.0f} ± {f.se_latency_us:.0f}"
                f" us/hop, bandwidth {f.effective_gbps:.3f} ± {f.se_effective_gbps:.3f} Gbit/s "
                f"({f.efficiency:.1%} of nominal); rel. rmse {f.rel_rmse:.1%}, max "
                f"{f.max_rel_err:.1%} over {f.points} points\n")
        if cal.host_gbps is not None:
            sys.stdout.write(f"hosts' unshaped ceiling: {cal.host_gbps:.1f} Gbit/s of ring volume "
                             "(2 ranks, 1 MiB and up); faster links are charged at it\n")
        sys.stdout.write(f"wrote {path}\n")
    sys.stdout.write(f"wrote {out / 'netbench.csv'}, {out / 'netbench.png'} in "
                     f"{time.monotonic() - t0:.0f} s\n")
    return 0


def _points(path: Path):
    """The measured points of an earlier netbench, or what is wrong with the file."""
    import polars as pl

    from coadapt.tools.netbench.bench import POINT_COLUMNS

    if not path.exists():
        return f"--refit: {path} not found; run 'coadapt netbench --out {path.parent}' first"
    try:
        df = pl.read_csv(path, schema_overrides={"bandwidth_gbps": pl.Float64})
    except pl.exceptions.PolarsError as exc:
        return f"--refit: {path}: not a readable CSV ({exc})"
    missing = [c for c in POINT_COLUMNS if c not in df.columns]
    if missing:
        return f"--refit: {path}: column {missing[0]!r} missing; is this netbench.csv?"
    return df.select(POINT_COLUMNS)


def run_cleanup(args: argparse.Namespace) -> int:
    from coadapt.backends.live.nodes import cleanup, leftover_holders

    killed = cleanup(include_running=args.all)
    left = leftover_holders()
    sys.stdout.write(f"killed {len(killed)} namespace holder(s) {killed}; "
                     f"{len(left)} of running runs left {left}\n")
    return 0
