"""Hostile-input audit of the CLI (issue 26): bad workloads, options, folders and files.

Each case runs `python -m coadapt ...` in its own fresh folder under --root and
is judged against what it expects: "refuse" (exit 2), "ok" (exit 0) or "either"
(0 or 2). A row is BAD when the command exits 1 or otherwise not 0/2, prints a
Traceback, runs past the per-case timeout (its whole process group is killed),
exits 0 where a refusal is expected (or 2 where success is), or fails the
case's own check: cause-1 cases must write nothing outside OUT (job names such
as '../../../hostile-x' or '/tmp/hostile-x-abs'); refused live cases must leave
OUT absent or empty. Causes: 1 job names become paths, 2 no bounds, 3 options,
4 output folders, 5 errors escaping as tracebacks.

Prints a markdown table, then the number of cases, of bad rows and the longest
refusal. Run from the repository:

    .venv/bin/python benchmarks/hostile.py [--only N|TEXT,...] [--root DIR] [--csv F]
                                           [--timeout S]
"""


from __future__ import annotations

import argparse
import csv
import shlex
import shutil
import sys
from pathlib import Path

from hostile_kit import (
    J1,
    J2,
    W2,
    Case,
    P,
    Result,
    W,
    bom_profile,
    chain,
    checkpoint,
    concurrent,
    copy,
    copy_profiles,
    escape_targets,
    exp,
    fake_live_header,
    files,
    first_line,
    killed_then_report,
    live,
    mangle_json,
    nan_all,
    nan_curves,
    out_untouched,
    prerun,
    run,
    set_perf,
    sim,
    strip_header,
    write,
)

# --- the cases --------------------------------------------------------------------------

def cases() -> list[Case]:
    cs: list[Case] = []
    names = [("dotdot", "../../../hostile-x", "refuse"), ("abs", "/tmp/hostile-x-abs", "refuse"),
             ("slash", "a/b", "refuse"), ("dot", ".", "refuse"), ("dotdot-bare", "..", "refuse"),
             ("long200", "n" * 200, "either"), ("empty", "", "refuse"), ("space", "a b", "either")]
    for tag, name, want in names:
        w = write([f"{name},0,mlp-mnist1d,1,32", J2])
        cs.append(Case(1, f"sim-name-{tag}", sim(), want, w))
        cs.append(Case(1, f"exp-name-{tag}", exp(), want, w))
        if want == "refuse":  # an accepted name would start real jobs
            cs.append(Case(1, f"live-name-{tag}", live(), want, w, out_untouched, 60))
    fields = [("time-inf", "j1,inf,mlp-mnist1d,1,32", "refuse"),
              ("time-1e15", "j1,1e15,mlp-mnist1d,1,32", "either"),
              ("time-nan", "j1,nan,mlp-mnist1d,1,32", "refuse"),
              ("time-neg", "j1,-1,mlp-mnist1d,1,32", "refuse"),
              ("batch-1e12", "j1,0,mlp-mnist1d,1,1e12", "refuse"),
              ("batch-0", "j1,0,mlp-mnist1d,1,0", "refuse"),
              ("batch-neg", "j1,0,mlp-mnist1d,1,-3", "refuse"),
              ("batch-over-max", "j1,0,mlp-mnist1d,1,100000", "either"),
              ("replicas-1e9", "j1,0,mlp-mnist1d,1e9,32", "either"),
              ("replicas-0", "j1,0,mlp-mnist1d,0,32", "refuse"),
              ("replicas-over-slots", "j1,0,mlp-mnist1d,3,32", "either"),
              ("too-many-fields", "j1,0,mlp-mnist1d,1,32,extra", "refuse"),
              ("too-few-fields", "j1,0,mlp-mnist1d,1", "refuse")]
    for tag, row, want in fields:
        cs.append(Case(2, f"sim-{tag}", sim(), want, write([row, J2])))
    for tag in ("time-nan", "time-1e15", "replicas-1e9", "batch-0"):
        row, want = next((r, w) for t, r, w in fields if t == tag)
        cs.append(Case(2, f"exp-{tag}", exp(), want, write([row, J2])))
    for tag in ("time-neg", "batch-1e12"):
        row = next(r for t, r, _ in fields if t == tag)
        cs.append(Case(2, f"live-{tag}", live(), "refuse", write([row, J2]), out_untouched, 60))
    for c in ("99999999x99999999", "0x2"):
        cs.append(Case(2, f"sim-cluster-{c[:4]}", sim("--cluster", c), "refuse", W))
        cs.append(Case(2, f"exp-cluster-{c[:4]}", exp("--cluster", c), "refuse", W))
    opts = [("interval-nan", ["--interval", "nan"]), ("interval-inf", ["--interval", "inf"]),
            ("interval-1e-9", ["--interval", "1e-9"]), ("interval-neg", ["--interval", "-1"]),
            ("restart-nan", ["--restart-delay", "nan"]),
            ("tiresias-nan", ["--tiresias-threshold", "nan"]),
            ("tiresias-neg", ["--tiresias-threshold", "-5"]), ("p-nan", ["--p", "nan"]),
            ("p-inf", ["--p", "inf"]), ("policy-arg-p-nan", ["--policy-arg", "pollux.p=nan"]),
            ("horizon-nan", ["--horizon", "nan"]), ("bandwidth-nan", ["--bandwidth", "nan"])]
    for tag, extra in opts:
        pol = "pollux" if tag.startswith("policy-arg") else "fixed"
        cs.append(Case(3, f"sim-{tag}", sim(*extra, policy=pol), "refuse", W))
    for tag, extra in opts[:8]:
        if tag != "interval-inf":
            cs.append(Case(3, f"exp-{tag}", exp(*extra), "refuse", W))
    cs.append(Case(3, "exp-seeds-neg", exp("--seeds", "-1"), "refuse", W))
    for tag, extra in [opts[0], opts[3], opts[4], opts[6], opts[7]]:
        cs.append(Case(3, f"live-{tag}", live(*extra), "refuse", W, out_untouched, 60))
    # 4: output folders
    big = {"wl": "cpu-load8"}
    cs.append(Case(4, "sim-concurrent-same-out", sim("--cluster", "8x2", **big), "either",
                   runner=concurrent))
    cs.append(Case(4, "exp-concurrent-same-out", exp(), "either", W, runner=concurrent))
    first_sim, first_exp = prerun(sim()), prerun(exp())
    cs.append(Case(4, "sim-rerun-plain", sim(), "refuse", chain(W, first_sim)))
    cs.append(Case(4, "sim-rerun-force", sim("--force"), "ok", chain(W, first_sim)))
    cs.append(Case(4, "sim-rerun-resume", sim("--resume"), "ok", chain(W, first_sim)))
    cs.append(Case(4, "exp-rerun-plain", exp(), "refuse", chain(W, first_exp)))
    cs.append(Case(4, "exp-rerun-force", exp("--force"), "ok", chain(W, first_exp)))
    cs.append(Case(4, "exp-rerun-resume", exp("--resume"), "ok", chain(W, first_exp)))
    three = sim("--cluster", "8x2", policy="fixed,pollux,tiresias", **big)
    cs.append(Case(4, "sim-killed-then-report", three, "either", runner=killed_then_report))
    cs.append(Case(4, "report-headerless-log", ["report", "out", "--no-plots"], "refuse",
                   chain(W, first_sim, strip_header("out/fixed/events.jsonl"))))
    cs.append(Case(4, "report-two-workloads", ["report", "out", "--no-plots"], "refuse",
                   chain(W, W2, first_sim, prerun(sim(policy="dynamic", out="o2", wl="w2.csv")),
                         copy("o2/dynamic", "out/dynamic"))))
    two = chain(W, prerun(sim(out="s")), copy("s", "l"))
    cmp = ["compare", "--sim", "s", "--live", "l", "--out", "cmp", "--no-plots"]
    cs.append(Case(4, "compare-headerless-live", cmp, "refuse",
                   chain(two, strip_header("l/fixed/events.jsonl"))))
    cs.append(Case(4, "compare-headerless-sim", cmp, "refuse",
                   chain(two, strip_header("s/fixed/events.jsonl"))))
    # 5: errors escaping as tracebacks
    mk = {n: files({n: None}) for n in ("dir", "cal", "rep")}
    touch = files({"f": "x"})
    cs += [Case(5, "sim-workload-dir", sim(wl="dir"), "refuse", mk["dir"]),
           Case(5, "exp-workload-dir", exp(wl="dir"), "refuse", mk["dir"]),
           Case(5, "live-workload-dir", live(wl="dir"), "refuse", mk["dir"], out_untouched, 60),
           Case(5, "sim-out-is-file", sim("--out", "f"), "refuse", chain(W, touch)),
           Case(5, "sim-out-under-file", sim("--out", "f/sub"), "refuse", chain(W, touch)),
           Case(5, "exp-out-is-file", exp("--out", "f"), "refuse", chain(W, touch)),
           Case(5, "sim-calibration-dir", sim("--calibration", "cal"), "refuse",
                chain(W, mk["cal"])),
           Case(5, "sim-live-costs-dir", sim("--live-costs", "cal"), "refuse",
                chain(W, mk["cal"]))]
    costs = f"{P}/live-costs.json"
    for tag, fn in [("types-empty", lambda c: c.update(types=[])),
                    ("nan", lambda c: c.update(types=nan_all(c["types"])))]:
        cs.append(Case(5, f"sim-calibration-{tag}", sim("--calibration", "c.json"), "refuse",
                       chain(W, mangle_json("c.json", fn, costs))))
    prof = copy_profiles
    cs.append(Case(5, "sim-profile-curves-nan", sim("--profiles", "prof"), "refuse",
                   chain(W, prof, nan_curves)))
    for tag, v in [("nan", float("nan")), ("inf", float("inf")), ("neg", -1.0)]:
        cs.append(Case(5, f"sim-profile-fit-{tag}", sim("--profiles", "prof"), "refuse",
                       chain(W, prof, mangle_json("prof/mlp-mnist1d/profile.json", set_perf(v)))))
    cs.append(Case(5, "sim-profile-csv-bom", sim("--profiles", "prof"), "ok",
                   chain(W, prof, bom_profile)))
    cs.append(Case(5, "report-empty-log", ["report", "out", "--no-plots"], "refuse",
                   files({"out": None, "out/fixed": None, "out/fixed/events.jsonl": ""})))
    other = chain(W, W2, prerun(sim(out="rep", wl="w2.csv")))
    cs += [Case(5, "sim-replay-empty-dir", sim("--replay", "rep"), "refuse", chain(W, mk["rep"])),
           Case(5, "sim-replay-other-workload", sim("--replay", "rep"), "refuse", other),
           Case(5, "sim-replay-other-workload-live-header", sim("--replay", "rep"), "refuse",
                chain(other, fake_live_header("rep/fixed/events.jsonl")))]
    gen = ["workload", "generate", "--profiles", P, "--num-jobs", "10"]
    cs += [Case(5, "gen-window-nan", [*gen, "--window", "nan", "--out", "g.csv"]),
           Case(5, "gen-window-inf", [*gen, "--window", "inf", "--out", "g.csv"]),
           Case(5, "gen-out-existing-dir", [*gen, "--out", "dir"], "refuse", mk["dir"]),
           Case(5, "gen-num-jobs-neg", [*gen, "--num-jobs", "-5", "--out", "g.csv"]),
           Case(5, "exp-parallel-neg", exp("-j", "-5"), "refuse", W),
           Case(5, "exp-parallel-0", exp("-j", "0"), "refuse", W),
           Case(5, "job-verify-truncated", ["job", "verify", "ck"], "refuse", checkpoint(True)),
           Case(5, "job-verify-random-bytes", ["job", "verify", "ck"], "refuse",
                checkpoint(False)),
           Case(5, "sim-workload-bom", sim(), "ok", write([J1, J2], enc="utf-8-sig")),
           Case(5, "sim-workload-crlf", sim(), "ok", write([J1, J2], nl="\r\n")),
           Case(5, "exp-workload-bom-crlf", exp(), "ok",
                write([J1, J2], enc="utf-8-sig", nl="\r\n")),
           Case(5, "sim-workload-utf16", sim(), "refuse", write([J1, J2], enc="utf-16"),
                mention="w.csv")]
    return cs


# --- driver -----------------------------------------------------------------------------

def note(r: Result) -> str:
    """A refusal by the catch-all handler: the input escaped every specific check."""
    return "note: catch-all refusal" if "run with -vv for the traceback" in r.err else ""


def judge(case: Case, r: Result) -> list[str]:
    bad = list(r.problems)
    codes = r.code.split("+")
    if "TIMEOUT" in codes:
        bad.append("TIMEOUT")
    if "1" in codes:
        bad.append("exit 1")
    if "Traceback" in r.err:
        bad.append("Traceback")
    if any(c not in ("0", "1", "2", "TIMEOUT") for c in codes):
        bad.append(f"exit {r.code}")
    if case.runner is None:
        if case.expect == "refuse" and r.code == "0":
            bad.append("accepted, want refusal")
        if case.expect == "ok" and r.code == "2":
            bad.append("refused, want success")
        if case.mention and r.code == "2" and case.mention not in (r.err + r.out):
            bad.append(f"message does not name {case.mention}")
    return bad


def run_case(case: Case, d: Path, timeout: float) -> Result:
    if d.exists():
        shutil.rmtree(d)
    d.mkdir(parents=True)
    try:
        if case.setup:
            case.setup(d)
    except Exception as e:  # noqa: BLE001 - a failed setup is a row, not a crash
        return Result("SETUP", 0.0, problems=[f"setup failed: {e}"[:140]])
    before = {p for p in escape_targets(d) if p.exists()}
    t = case.timeout or timeout
    r = case.runner(case, d, t) if case.runner else run(case.argv, d, t)
    if case.check:
        r.problems += case.check(d, r)
    if case.cause == 1:
        r.problems += [f"wrote {p}" for p in escape_targets(d) if p.exists() and p not in before]
    return r


def selected(i: int, case: Case, only: str | None) -> bool:
    if not only:
        return True
    return any(t == str(case.cause) or t == f"#{i}" or (not t.isdigit() and t in case.name)
               for t in only.split(","))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--root", type=Path, default=Path("/tmp/hostile"))
    ap.add_argument("--csv", type=Path)
    ap.add_argument("--timeout", type=float, default=120.0, help="per case, seconds")
    ap.add_argument("--only", help="cause numbers, #row or name substrings, comma separated")
    args = ap.parse_args(argv)
    root = args.root.resolve()
    rows = []
    print(f"$P = {P}; each command is `coadapt ...` run in its own folder under {root}\n")
    print("| # | cause | case | command | exit | seconds | first line of message | bad |")
    print("|---|---|---|---|---|---|---|---|")
    for i, case in enumerate(cases(), 1):
        if not selected(i, case, args.only):
            continue
        r = run_case(case, root / f"{i:03d}-{case.name}", args.timeout)
        bad = judge(case, r)
        cmd = "coadapt " + shlex.join(case.argv).replace(P, "$P")
        row = [i, case.cause, f"{case.name} ({case.expect})", cmd, r.code, f"{r.secs:.1f}",
               r.msg if r.msg is not None else (first_line(r) or (r.problems or [""])[0]),
               "; ".join(bad)]
        rows.append(row)
        cells = [str(c).replace("|", "\\|") for c in row]
        cells[3], cells[-1] = f"`{cells[3]}`", f"**BAD: {cells[-1]}**" if bad else note(r)
        print("| " + " | ".join(cells) + " |", flush=True)
    if args.csv:
        with args.csv.open("w", newline="") as fh:
            w = csv.writer(fh)
            w.writerow(["#", "cause", "case", "command", "exit", "seconds", "message", "bad"])
            w.writerows(rows)
    refusals = [(float(r[5]), r[2]) for r in rows if "2" in str(r[4]).split("+")]
    longest = max(refusals, default=(0.0, "-"))
    print(f"\ncases: {len(rows)}  bad: {sum(1 for r in rows if r[7])}  "
          f"longest refusal: {longest[0]:.1f} s ({longest[1]})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
