"""Tools that run real jobs to measure them: the profiler and the machine
calibrator (``measure``) and the network benchmark (``netbench``). Nothing
below this layer imports it: the simulator reads what these tools wrote."""
