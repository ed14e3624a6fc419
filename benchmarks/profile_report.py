"""Print the headline figures of shipped CPU profiles (``profiles/<type>/``).

    python benchmarks/profile_report.py [profiles] [--markdown]

Per type: wall and CPU step time at 1 and 2 workers (median, p25-p75, over
all local batch sizes measured), the fitted throughput model, samples to
target at each measured batch size, and phi at the start/middle/end of
training with its spread over seeds. Everything is read from the files, so
the numbers here are exactly what the simulator gets.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import polars as pl

from coadapt.world.profiles.cpu_format import read_cpu_profile


def _fmt(x: float | None, scale: float = 1.0, digits: int = 1) -> str:
    return "-" if x is None else f"{x * scale:.{digits}f}"


def step_table(cells: list[dict]) -> pl.DataFrame:
    return pl.DataFrame(cells).select(
        "workers", "local_bsz",
        (pl.col("step_time") * 1e3).round(2).alias("wall_ms"),
        (pl.col("step_time_p25") * 1e3).round(2).alias("wall_p25"),
        (pl.col("step_time_p75") * 1e3).round(2).alias("wall_p75"),
        (pl.col("cpu_time") * 1e3).round(2).alias("cpu_ms"),
        (pl.col("cpu_time_p25") * 1e3).round(2).alias("cpu_p25"),
        (pl.col("cpu_time_p75") * 1e3).round(2).alias("cpu_p75"),
        (pl.col("sync_time") * 1e3).round(2).alias("sync_ms"),
        pl.col("run_spread").round(3), "repeats", "runs_contended",
    ).sort("workers", "local_bsz")


def report(folder: Path) -> str:
    prof = read_cpu_profile(folder, require_validation=False)
    info, meta = prof.info, prof.meta
    lines = [f"## {meta.name}  (M0={meta.limits.init_batch_size}, target {meta.metric} "
             f"{'>=' if meta.higher_is_better else '<='} {meta.target}, "
             f"eval every {meta.eval_every} progress)"]
    m = info.get("machine", {})
    lines.append(f"measured on {m.get('hostname')} ({m.get('cpu_model')}, {m.get('nproc')} "
                 f"cpus, torch {m.get('torch')}) at {m.get('date')}")
    timing = info.get("timing", {})
    lines.append(f"timing: {timing.get('repeats')} repeats x {timing.get('steps')} steps "
                 f"(+{timing.get('warmup')} warm-up); spread {timing.get('spread')}")
    with pl.Config(tbl_rows=50, tbl_cols=20, tbl_width_chars=160):
        lines.append(str(step_table(timing.get("cells", []))))
    lines.append(f"perf params: {info.get('perf_params')}")
    curves = info.get("curves", {}).get("by_batch_size", {})
    rows = []
    for bsz, entry in sorted(curves.items(), key=lambda kv: int(kv[0])):
        runs = entry["runs"]
        stt = entry.get("samples_to_target")
        rows.append({
            "M": int(bsz), "seeds": len(runs),
            "reached": sum(r["reached"] for r in runs),
            "samples_to_target": _fmt(stt and stt["median"], digits=0),
            "range": f"{_fmt(stt and stt['min'], digits=0)}-{_fmt(stt and stt['max'], digits=0)}",
            "phi_over": entry.get("phi_from", "-"),
            **{f"phi_{w}": (f"{entry[f'phi_{w}']['median']:.1f} "
                            f"[{entry[f'phi_{w}']['min']:.1f}, {entry[f'phi_{w}']['max']:.1f}]"
                            if f"phi_{w}" in entry else "-")
               for w in ("start", "middle", "end")},
        })
    with pl.Config(tbl_rows=50, tbl_cols=20, tbl_width_chars=160, fmt_str_lengths=40):
        lines.append(str(pl.DataFrame(rows)) if rows else "no runs to target")
    planned = info.get("curves", {}).get("runs", [])
    if planned:
        with pl.Config(tbl_rows=50, tbl_cols=20, tbl_width_chars=160):
            lines.append(str(pl.DataFrame(planned)))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("root", nargs="?", default="profiles")
    args = ap.parse_args(argv)
    root = Path(args.root)
    folders = sorted(p for p in root.iterdir() if (p / "profile.json").is_file())
    if not folders:
        print(f"no profiles under {root}", file=sys.stderr)
        return 1
    for folder in folders:
        print(report(folder))
        print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
