"""Emulated nodes on one machine and the measured network between them."""
