import json

import pytest
from toyprofile import make_toy

from coadapt.cli import main


def write_adaptdl(root, name="toy"):
    prof = make_toy(name)
    d = root / "traces" / name
    d.mkdir(parents=True)
    prof.placements.write_csv(d / "placements.csv")
    for batch, df in prof.validation.items():
        df.write_csv(d / f"validation-{batch}.csv")
    return root


def write_workload(path, rows):
    path.write_text("name,time,application,num_replicas,batch_size\n" + "\n".join(rows) + "\n")
    return path


@pytest.fixture
def setup(tmp_path):
    ref = write_adaptdl(tmp_path / "ref")
    wl = write_workload(tmp_path / "w.csv", [f"j{i},{30 * i},toy,{1 + i % 2},64" for i in range(6)])
    return tmp_path, ref, wl


def test_simulate_all_policies_writes_logs_and_summaries(setup, capsys):
    tmp, ref, wl = setup
    out = tmp / "out"
    code = main(["simulate", "--workload", str(wl), "--profiles", f"adaptdl:{ref}",
                 "--policy", "all", "--cluster", "2x4", "--out", str(out), "--no-progress"])
    assert code == 0
    text = capsys.readouterr().out
    assert "SIMULATED" in text and "pollux" in text and "tiresias" in text
    for policy in ("fixed", "dynamic", "pollux", "tiresias", "optimus-oracle"):
        s = json.loads((out / policy / "summary.json").read_text())
        for key in ("policy", "workload", "jobs", "completed", "avg_jct", "p50_jct", "p99_jct",
                    "makespan", "utilization", "max_rho", "unfair_frac", "jain_rho",
                    "decision_ms_median", "wall_s"):
            assert key in s
        assert s["completed"] == 6 and s["simulated"]
        assert (out / policy / "events.jsonl").read_text().count("\n") > 10
    assert (out / "comparison.csv").exists()
    # 'report' recomputes the summary from the logs alone: its mean JCT is the mean of
    # complete - submit, computed here independently from the raw lines.
    (out / "pollux" / "summary.json").unlink()
    assert main(["report", str(out), "--no-plots"]) == 0
    after = json.loads((out / "pollux" / "summary.json").read_text())
    events = [json.loads(line) for line in (out / "pollux" / "events.jsonl").open()]
    sub = {e["job"]: e["t"] for e in events if e["kind"] == "submit"}
    jct = [e["t"] - sub[e["job"]] for e in events if e["kind"] == "complete"]
    assert after["avg_jct"] == pytest.approx(sum(jct) / len(jct))


def test_unknown_policy_exits_2(setup, capsys):
    tmp, ref, wl = setup
    code = main(["simulate", "--workload", str(wl), "--profiles", f"adaptdl:{ref}",
                 "--policy", "srtf", "--out", str(tmp / "o")])
    assert code == 2 and "unknown policy 'srtf'" in capsys.readouterr().err


def test_bad_workload_row_exits_2_naming_line_and_field(setup, capsys):
    tmp, ref, _ = setup
    wl = write_workload(tmp / "bad.csv", ["a,0,toy,1,64", "b,x,toy,1,64"])
    code = main(["simulate", "--workload", str(wl), "--profiles", f"adaptdl:{ref}",
                 "--out", str(tmp / "o")])
    err = capsys.readouterr().err
    assert code == 2 and "bad.csv:3: field 'time'" in err


def test_missing_profile_file_exits_2(setup, capsys):
    tmp, ref, wl = setup
    (ref / "traces" / "toy" / "placements.csv").unlink()
    code = main(["simulate", "--workload", str(wl), "--profiles", f"adaptdl:{ref}",
                 "--out", str(tmp / "o")])
    err = capsys.readouterr().err
    assert code == 2 and "placements.csv" in err


def test_bad_profile_value_names_line_and_field(setup, capsys):
    tmp, ref, wl = setup
    p = ref / "traces" / "toy" / "validation-32.csv"
    lines = p.read_text().splitlines()
    lines[3] = lines[3].replace(lines[3].split(",")[3], "oops", 1)
    p.write_text("\n".join(lines) + "\n")
    code = main(["simulate", "--workload", str(wl), "--profiles", f"adaptdl:{ref}",
                 "--out", str(tmp / "o")])
    err = capsys.readouterr().err
    assert code == 2 and "validation-32.csv:4: field 'grad_sqr'" in err


def test_fractional_micro_batch_in_a_profile_is_refused(setup, capsys):
    # found by the profile fuzz test: a local_bsz of 0.5 loaded as a micro-batch of 0
    tmp, ref, wl = setup
    p = ref / "traces" / "toy" / "placements.csv"
    lines = p.read_text().splitlines()
    cells = lines[1].split(",")
    col = lines[0].split(",").index("local_bsz")
    cells[col] = "0.5"
    lines[1] = ",".join(cells)
    p.write_text("\n".join(lines) + "\n")
    code = main(["simulate", "--workload", str(wl), "--profiles", f"adaptdl:{ref}",
                 "--out", str(tmp / "o")])
    err = capsys.readouterr().err
    assert code == 2 and "placements.csv:2: field 'local_bsz': expected an integer" in err
    assert not (tmp / "o").exists()


def test_a_large_workload_logs_gzipd_and_every_reader_takes_it(setup, capsys, monkeypatch):
    import coadapt.runs.simulate as simulate

    monkeypatch.setattr(simulate, "GZIP_JOBS", 3)  # 6 jobs: "large"
    tmp, ref, wl = setup
    out = tmp / "out"
    args = ["--workload", str(wl), "--profiles", f"adaptdl:{ref}", "--cluster", "2x4",
            "--no-progress", "--no-plots"]
    assert main(["simulate", *args, "--policy", "fixed,pollux", "--out", str(out)]) == 0
    for policy in ("fixed", "pollux"):
        assert (out / policy / "events.jsonl.gz").exists()
        assert not (out / policy / "events.jsonl").exists()
        assert json.loads((out / policy / "summary.json").read_text())["completed"] == 6
    plain = json.loads((out / "pollux" / "summary.json").read_text())
    capsys.readouterr()
    assert main(["report", str(out)]) == 0 and "pollux" in capsys.readouterr().out
    # a replay of the gzip'd logs, into a folder of its own, reproduces the JCTs
    again = tmp / "again"
    assert main(["simulate", *args, "--replay", str(out), "--out", str(again)]) == 0
    assert json.loads((again / "pollux" / "summary.json").read_text())["avg_jct"] == \
        pytest.approx(plain["avg_jct"], rel=0.05)
    # rerunning a smaller workload into the same folder leaves one log, plain
    monkeypatch.setattr(simulate, "GZIP_JOBS", 100)
    assert main(["simulate", *args, "--policy", "pollux", "--out", str(out), "--force"]) == 0
    assert (out / "pollux" / "events.jsonl").exists()
    assert not (out / "pollux" / "events.jsonl.gz").exists()


def test_help_explains(capsys):
    with pytest.raises(SystemExit):
        main(["simulate", "--help"])
    assert "SIMULATED" in capsys.readouterr().out


def _header(path):
    with path.open() as f:
        return json.loads(f.readline())


@pytest.mark.parametrize("live_marker", ["live.json", "pollux/events.jsonl"])
def test_simulate_refuses_a_folder_holding_a_live_run(setup, capsys, live_marker):
    tmp, ref, wl = setup
    out = tmp / "live"
    (out / "pollux").mkdir(parents=True)
    log = out / "pollux" / "events.jsonl"
    log.write_text(json.dumps({"t": 0, "kind": "header", "job": None, "mode": "live"}) + "\n"
                   + json.dumps({"t": 1, "kind": "submit", "job": "j0"}) + "\n")
    if live_marker == "live.json":
        log.write_text(log.read_text().replace('"live"', '"simulate"'))  # only live.json says
        (out / "live.json").write_text("{}\n")
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    code = main(["simulate", "--workload", str(wl), "--profiles", f"adaptdl:{ref}",
                 "--policy", "pollux", "--out", str(out), "--no-progress"])
    err = capsys.readouterr().err
    assert code == 2 and "holds a live run" in err and live_marker in err
    assert "Nothing was changed" in err
    assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == before


def test_simulate_preset_and_labels_in_header(setup, capsys):
    tmp, ref, wl = setup
    out = tmp / "out"
    code = main(["simulate", "--workload", str(wl), "--profiles", f"adaptdl:{ref}",
                 "--policy", "tiresias", "--cluster", "2x4", "--preset", "osdi21",
                 "--interval", "30", "--efficiency-truth", "formula", "--out", str(out),
                 "--no-progress"])
    assert code == 0
    h = _header(out / "tiresias" / "events.jsonl")
    assert h["run_kind"] == "simulation" and h["efficiency_truth"] == "formula"
    assert h["interval"] == 30.0  # the flag wins over the preset's 60
    assert (h["restart_delay"], h["start_node"], h["tiresias_threshold"]) == (30.0, False, 57600)
    assert "preset osdi21" in capsys.readouterr().out
    # a simulation's folder is replaced only when asked: --force
    again = ["simulate", "--workload", str(wl), "--profiles", f"adaptdl:{ref}",
             "--policy", "tiresias", "--cluster", "2x4", "--out", str(out), "--no-progress"]
    assert main(again) == 2
    assert "holds an earlier run's results" in capsys.readouterr().err
    assert main([*again, "--force"]) == 0
    h = _header(out / "tiresias" / "events.jsonl")
    assert h["interval"] == 15.0 and h["start_node"] is True
