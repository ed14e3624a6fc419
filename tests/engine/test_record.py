"""Node identity on the way through the engine: the record and the snapshot."""

from toyprofile import make_toy

from coadapt.backends.modeled.backend import ModeledBackend
from coadapt.engine.loop import Engine
from coadapt.engine.observations import Observations
from coadapt.engine.record import JobRecord
from coadapt.eventlog import EventLog, read_events
from coadapt.models.batching import JobLimits
from coadapt.policies import PolicyConfig, make_policy
from coadapt.world.cluster import ClusterSpec, Node
from coadapt.world.kinds import KindFactor, KindSpeeds
from coadapt.world.workload import JobSpec, Workload
from coadapt.world.world import World

LIMITS = JobLimits(init_batch_size=32, max_batch_size=1024, min_local_bsz=8, max_local_bsz=64,
                   max_replicas=16)


def test_a_record_keeps_which_nodes_it_uses():
    r = JobRecord(JobSpec("j", 0.0, "toy", 3, 64), LIMITS, Observations(32))
    r.set_allocation((0, 2, 0, 1))
    assert r.placement == (2, 1)  # what the truth prices
    assert r.nodes_used == (1, 3)  # which nodes those are
    assert r.obs_key[0] == 2
    r.set_allocation((0, 0, 0, 0))
    assert r.placement == r.nodes_used == ()


def test_a_released_record_keeps_its_shape_and_configurations_not_its_per_node_entries():
    r = JobRecord(JobSpec("j", 0.0, "toy", 3, 64), LIMITS, Observations(32))
    r.set_allocation((0, 2, 0, 1))
    r.micro = 16
    r.obs.record(r.obs_key, 0.1, 0.02)
    r.release()
    assert r.allocation == ()  # nothing per node is held for a finished job
    assert (r.replicas, r.nodes_used, r.batch_size) == (3, (1, 3), 48)
    assert r.obs.configurations == [(2, 3, 16)] and r.obs.max_observed_replicas == 3
    r.obs.record((1, 1, 8), 0.05, 0.0)  # a late report is kept, not an error
    assert sorted(r.obs.configurations) == [(1, 1, 8), (2, 3, 16)]
    r.set_allocation((1, 0, 0, 0))  # and a new allocation is read as usual
    assert (r.replicas, r.nodes_used) == (1, (0,))


class Spy:
    """Fixed, remembering the nodes each snapshot showed."""

    name = "spy"
    uses_oracle = False

    def __init__(self) -> None:
        self.inner = make_policy("fixed", PolicyConfig())
        self.seen: list[tuple[Node, ...]] = []

    def decide(self, snap):
        self.seen.append(snap.nodes)
        return self.inner.decide(snap)


def test_policies_see_the_clusters_typed_nodes(tmp_path):
    prof = make_toy()
    cluster = ClusterSpec.parse("1x4:fast,1x2")
    wl = Workload("t", tmp_path / "w.csv", (JobSpec("j", 0.0, "toy", 2, 64),))
    spy = Spy()
    fast = KindSpeeds({"toy": {"fast": KindFactor(0.5, 1.0)}})
    with EventLog(tmp_path / "s.jsonl") as log:
        world = World.build({"toy": prof}, cluster, kind_speeds=fast)
        Engine(wl, world.limits, ModeledBackend(world, 30.0), spy, cluster, log).run()
    assert spy.seen and all(nodes == cluster.nodes for nodes in spy.seen)
    assert spy.seen[0][0] == Node(0, 4, "fast") and spy.seen[0][1].kind == "default"
    allocs = [e for e in read_events(tmp_path / "s.jsonl") if e["kind"] == "allocate"]
    # one kind per job, first fit: the kind with the most room, then best fit on it
    assert allocs[0]["allocation"] == [2, 0] and allocs[0]["nodes"] == 1
    assert allocs[0]["node_kind"] == "fast"  # several kinds: the log names the one used


def test_observations_are_kept_per_kind_of_node():
    r = JobRecord.new(JobSpec("j", 0.0, "toy", 2, 64), LIMITS, 0.0, ("a", "a", "b"))
    r.set_allocation((1, 0, 0))
    assert r.kind == "a"
    r.obs.record((1, 1, 32), 0.1, 0.0)
    seen_on_a = r.obs
    r.set_allocation((0, 0, 1))  # moved to kind b: a fresh model there
    assert r.kind == "b" and r.obs is not seen_on_a and not r.obs.configurations
    r.set_allocation((0, 0, 0))  # stopped: still remembers it ran on b last
    assert r.kind == "b"
    r.set_allocation((0, 1, 0))  # back on a: its observations there are back
    assert r.kind == "a" and r.obs is seen_on_a and r.by_kind["b"].max_observed_replicas == 0
