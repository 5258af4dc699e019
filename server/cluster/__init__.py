"""Cluster mode (`groupcoord serve --cluster postgresql://… --node-id N`): groups sharded over nodes.

Entry: `ClusterNode` (node.py). Lease SQL: leases.py. Design and limits: docs/cluster.md.
"""

from groupcoord.server.cluster.node import ClusterNode

__all__ = ["ClusterNode"]
