import csv

import numpy as np
from toyprofile import make_toy

from coadapt.cli import main
from coadapt.workloads.generate import (
    ADAPTDL_CLASSES,
    configurations,
    generate,
    parametric_arrivals,
)
from coadapt.world.cluster import ClusterSpec
from coadapt.world.workload import load_workload
from coadapt.world.world import World


def test_tuned_configurations_match_the_published_workloads(reference_dir, reference_apps):
    apps = reference_apps
    published = set()
    for path in sorted((reference_dir / "workloads").glob("workload-*.csv")):
        with open(path) as fh:
            for row in csv.DictReader(fh):
                published.add((row["application"], int(row["num_replicas"]),
                               int(row["batch_size"])))
    # GPU profiles are outside the job registry: their truth is the profile itself.
    world = World.build(apps, ClusterSpec.parse("16x4"))
    ours = {(a, r, b) for a in apps for r, b in configurations(world, a)}
    # One difference, by design: coadapt's one batch splitter runs one replica above M0
    # as two micro-batches (AdaptDL's rule, which the reference simulator also applies),
    # the reference generator did not; that slows deepspeech2's 1-GPU baseline just
    # enough for 16 GPUs at 640 to count as "tuned".
    assert ours - published == {("deepspeech2", 16, 640)}
    assert published <= ours


def test_parametric_generator_is_seeded_and_loadable(tmp_path):
    prof = {"toy": make_toy()}
    classes = {c: ("toy",) for c in ADAPTDL_CLASSES}
    mix = {"small": 0.7, "medium": 0.2, "large": 0.1}
    world = World.build(prof, ClusterSpec.parse("2x4"))
    rows = [generate(parametric_arrivals(20, 3600, mix, np.random.default_rng(3)), 20, world,
                     classes, np.random.default_rng(3)) for _ in range(2)]
    assert rows[0] == rows[1] and len(rows[0]) == 20
    times = [r[1] for r in rows[0]]
    assert times == sorted(times) and 0 <= times[0] and times[-1] <= 3600


def test_cli_generate_writes_a_valid_workload(tmp_path, reference_dir, reference_apps):
    out = tmp_path / "w.csv"
    code = main(["workload", "generate", "--profiles", f"adaptdl:{reference_dir}",
                 "--num-jobs", "30", "--seed", "5", "--out", str(out)])
    assert code == 0
    wl = load_workload(str(out), set(reference_apps))
    assert len(wl.jobs) == 30


def test_cli_generate_works_on_its_defaults(tmp_path, monkeypatch):
    """The shipped CPU profiles, the CPU sets' classes, 8x2: no option needed."""
    import shutil
    from pathlib import Path

    repo = Path(__file__).resolve().parents[2]
    shutil.copytree(repo / "profiles", tmp_path / "profiles")
    monkeypatch.chdir(tmp_path)
    assert main(["workload", "generate"]) == 0
    wl = load_workload(str(tmp_path / "out" / "workload.csv"),
                       {"mlp-mnist1d", "cnn-mnist1d", "transformer-text", "lstm-text"})
    assert len(wl.jobs) == 160
