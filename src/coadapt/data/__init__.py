"""The inputs every layer shares: the cluster's shape and network, and the
workload (which jobs arrive when, asking for what). Plain data and readers."""
