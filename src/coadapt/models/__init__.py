"""The Pollux goodput model (``goodput``) and gradient statistics (``gradstats``).

Import the submodules directly: this package stays empty so that training
workers, which need only ``gradstats``, do not pay for importing scipy.
"""
