"""Live jobs: real worker groups (``coadapt.jobs``) pinned to cores, optionally
inside emulated nodes (network namespaces, shaped links), driven by the engine
on ``simpy.rt.RealtimeEnvironment``."""
