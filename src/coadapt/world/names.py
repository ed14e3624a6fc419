"""Names and places the command line shows in its help: kept here, free of
numpy and polars, so that ``coadapt simulate --help`` loads none of them."""

from __future__ import annotations

from pathlib import Path

EFFICIENCY_TRUTHS = ("curves", "formula")
"""The simulator's truths for statistical efficiency (``--efficiency-truth``)."""
SOSP23_CLUSTER = "6x4:aws,3x8:rtx,2x8:dgx-ext"
"""The Sia study's 64-GPU cluster of three GPU types."""
CALIBRATIONS_DIR = Path("out/calibrations")
"""Where ``coadapt calibrate`` keeps each machine's calibrations."""
KIND_SPEEDS_FILE = "kind-speeds.json"
"""A profile folder's measured speeds of the CPU kinds of node."""
