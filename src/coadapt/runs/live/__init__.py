"""A live run: checks, the prediction before it, the run on real processes
(signals, status table, resume) and the judge after it."""
