"""Tools that run real jobs to measure them: the profiler (``coadapt profile``)
and the machine calibrator (``coadapt calibrate``).

Nothing below this package (the profile readers, the simulator, the engine,
the policies) imports it: the simulator reads what these tools wrote, through
``coadapt.world.profiles``.
"""
