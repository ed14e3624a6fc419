"""Real gloo all-reduce between emulated nodes: the network calibration."""
