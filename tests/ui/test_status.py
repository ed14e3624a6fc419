"""The live status table."""

import io

from coadapt.ui.status import StatusTable


class Tty(io.StringIO):
    def isatty(self):
        return True


ROWS = [{"job": "a", "type": "t", "state": "running", "workers": 2, "batch": 64,
         "progress": 50.0, "metric": 0.5, "rate": 5.0},
        {"job": "b", "type": "t", "state": "waiting", "workers": 0, "batch": 0,
         "progress": 0.0, "metric": None, "rate": None}]


def test_renders_progress_eta_and_redraws_in_place():
    out = Tty()
    table = StatusTable("live", {"t": 100.0}, stream=out, min_interval=0.0)
    table.update(10.0, ROWS)
    first = out.getvalue()
    assert "50 (50%)" in first and "~0:10" in first and "done 0/2" in first
    table.update(11.0, ROWS)
    # The second draw moves the cursor up over the first (4 lines: title, header, 2 rows).
    assert out.getvalue()[len(first):].startswith("\x1b[4F")


def test_into_a_file_it_writes_whole_tables_at_an_interval():
    out = io.StringIO()
    table = StatusTable("live", stream=out, every=3600.0)
    table.update(0.0, ROWS)
    table.update(1.0, ROWS)  # within the interval: nothing
    assert out.getvalue().count("job") == 1 and "\x1b" not in out.getvalue()
    table.update(2.0, ROWS, force=True)
    assert out.getvalue().count("state") == 2
