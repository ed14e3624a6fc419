"""Live mode: the engine and policies drive real CPU job processes on the wall clock.

``backend`` supplies real worker groups (``coadapt.jobs``) pinned to cores as
the engine's job backend on ``simpy.rt.RealtimeEnvironment``; ``run`` wires
signals, the status table and resume; ``calibrate`` measures what live pays
(start, restart, validation, verification, co-location) for the simulator.
"""
