"""coadapt: a testbed for goodput-optimized scheduling of deep-learning training."""

__version__ = "0.1.0"
