"""The scheduling loop shared by simulation and live runs.

One engine (arrivals, rounds: snapshot -> policy -> apply, completions) drives
jobs through a small backend protocol (``backend``); a modeled job
(``coadapt.backends.modeled``) and a real process group (``coadapt.backends.live``)
both satisfy it.
What a policy may know about a job (its record, observations and fitted
goodput model) is kept here, in one place for both modes.
"""
