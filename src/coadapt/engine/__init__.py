"""The scheduling loop shared by simulation and live runs.

One engine (arrivals, rounds: snapshot -> policy -> apply, completions) drives
jobs through a small backend protocol (``backend``); a modeled job
(``coadapt.sim``) and a real process group (``coadapt.live``) both satisfy it.
What a policy may know about a job (its record, observations and fitted
goodput model) is kept here, in one place for both modes.
"""
