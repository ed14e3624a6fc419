"""Cleanup evidence for emulated nodes: a tiny live run on 2x1 emulated nodes
ends normally, by Ctrl-C (SIGINT) and by a SIGKILL of the executor; after
each, what this machine shows (``ip netns``, ``ip link``, ``tc qdisc``, and
every coadapt process) is printed beside what it showed before. Root.

    python benchmarks/net_cleanup.py /tmp/net-cleanup
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TINY = ["--target", "mlp-mnist1d=0.45", "--eval-every", "mlp-mnist1d=20"]


def shown() -> dict[str, str]:
    def run(*argv: str) -> str:
        return subprocess.run(argv, capture_output=True, text=True).stdout.strip()

    procs = [line for line in run("ps", "-eo", "pid,ppid,args").splitlines()
             if "coadapt" in line and "net_cleanup" not in line and " ps " not in line]
    return {"ip netns": run("ip", "netns", "list") or "(none)",
            "ip link": run("ip", "-o", "link", "show"),
            "tc qdisc": run("tc", "qdisc", "show"),
            "coadapt processes": "\n".join(procs) or "(none)"}


def live(root: Path, name: str, target: str) -> subprocess.Popen:
    wl = root / "w.csv"
    wl.write_text("name,time,application,num_replicas,batch_size\na,0,mlp-mnist1d,2,64\n")
    return subprocess.Popen(
        [sys.executable, "-m", "coadapt.cli", "live", "--workload", str(wl), "--policy", "fixed",
         "--cluster", "2x1", "--network", "emulated", "--bandwidth", "1", "--interval", "3",
         "--out", str(root / name), "--no-compare", "--calibration", "profiles", "--no-status",
         *TINY, "--target", f"mlp-mnist1d={target}"],
        cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def wait_started(root: Path, name: str) -> None:
    ev = root / name / "fixed" / "jobs" / "a" / "events.jsonl"
    end = time.monotonic() + 120
    while time.monotonic() < end:
        if ev.exists() and '"start"' in ev.read_text():
            time.sleep(2)
            return
        time.sleep(0.2)
    raise SystemExit("the job never started")


def main() -> int:
    root = Path(sys.argv[1] if len(sys.argv) > 1 else "/tmp/net-cleanup")
    root.mkdir(parents=True, exist_ok=True)
    before = shown()
    for label, target, sig in (("normal end", "0.45", None), ("ctrl-c", "0.99", signal.SIGINT),
                               ("sigkill", "0.99", signal.SIGKILL)):
        name = label.replace(" ", "-")
        proc = live(root, name, target)
        if sig is not None:
            wait_started(root, name)
            during = shown()
            os.kill(proc.pid, sig)
        proc.wait(timeout=180)
        time.sleep(1.0)
        after = shown()
        same = {k: after[k] == before[k] for k in before}
        sys.stdout.write(f"## {label}: exit {proc.returncode}; unchanged vs before: {same}\n")
        if sig is not None:
            sys.stdout.write(f"   while running: {during['coadapt processes'].count(chr(10)) + 1} "
                             "coadapt processes\n")
        for k, v in after.items():
            if not same[k]:
                sys.stdout.write(f"   {k} after:\n{v}\n   before:\n{before[k]}\n")
    sys.stdout.write("\nafter all three:\n" + "\n".join(f"{k}: {v}" for k, v in shown().items())
                     + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
