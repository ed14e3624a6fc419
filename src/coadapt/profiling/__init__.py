"""Application profiles: what the simulator knows about each job type.

``AppProfile`` is the one interface; loaders turn files into it (AdaptDL's
published GPU traces, coadapt's own CPU profiles).
"""

from coadapt.profiling.profile import AppProfile, ProfileError

__all__ = ["AppProfile", "ProfileError"]
