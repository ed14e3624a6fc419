"""What the simulator reads about job types and machines.

``AppProfile`` is the one interface of a job type's profile; loaders turn
files into it (AdaptDL's published GPU traces, coadapt's own CPU profiles).
Nothing here runs a job: the tools that measure live in ``coadapt.tools.measure``.
"""

from coadapt.world.profiles.profile import AppProfile, ProfileError

__all__ = ["AppProfile", "ProfileError"]
