import numpy as np
from kindviews import MODEL, view

from coadapt.policies.estimates import best_goodput, packed_nodes
from coadapt.policies.goodput_tables import GoodputTables


def test_tables_are_the_jobs_own_optimum_and_kept_while_the_model_is():
    jobs = [view("a", kind="a", models={"a": MODEL}), view("b", kind="a", models={"a": MODEL}),
            view("new")]
    tables = GoodputTables()
    got = tables.lookup(jobs, np.array([6, 3, 4]), per_node=4)
    assert got[2] is None  # no model yet: nothing to tabulate
    r = np.arange(1, 7)
    best = best_goodput(jobs[0], packed_nodes(r, 4), r)
    assert got[0].goodput[0] == 0 and np.array_equal(got[0].goodput[1:], best.goodput)
    assert np.array_equal(got[0].local_batch[1:], best.batch_size)
    assert len(got[1].goodput) == 4
    again = tables.lookup(jobs[:1], np.array([5]), per_node=4)
    assert again[0] is got[0]  # same model, long enough: reused
    longer = tables.lookup(jobs[:1], np.array([9]), per_node=4)
    assert longer[0] is not got[0] and len(longer[0].goodput) == 10
    assert tables.lookup(jobs[:1], np.array([5]), per_node=2)[0].per_node == 2
    assert set(tables._held) == {"a"}  # jobs no longer shown are forgotten
