"""
TrustGraph's own configuration service (trustgraph-flow config-svc) with
its Cassandra table store swapped for one in memory: everything else (the
request handling, versions, pushes, its pub/sub backend) is TrustGraph's
code. As shipped it cannot start without a Cassandra server: its
ConfigTableStore connects to one in the constructor.
"""

import sys
import types


class MemoryConfigTableStore:
    """The methods of trustgraph.tables.config.ConfigTableStore that the service calls."""

    def __init__(self, *args, **kwargs):
        self.rows = {}  # (workspace, class, key) -> value
        self.version = 0

    async def inc_version(self):
        self.version += 1

    async def get_version(self):
        return self.version

    async def put_config(self, workspace, cls, key, value):
        self.rows[(workspace, cls, key)] = value

    async def get_value(self, workspace, cls, key):
        return self.rows.get((workspace, cls, key))

    async def get_keys(self, workspace, cls):
        return sorted(k for (w, c, k) in self.rows if w == workspace and c == cls)

    async def get_values(self, workspace, cls):
        return [[k, self.rows[(workspace, cls, k)]] for k in await self.get_keys(workspace, cls)]

    async def get_values_all_ws(self, cls):
        return sorted((w, k, v) for (w, c, k), v in self.rows.items() if c == cls)

    async def get_keys_all_ws(self, cls):
        return sorted((w, k) for (w, c, k) in self.rows if c == cls)

    async def delete_key(self, workspace, cls, key):
        self.rows.pop((workspace, cls, key), None)

    async def get_all_for_workspace(self, workspace):
        return sorted((c, k, v) for (w, c, k), v in self.rows.items() if w == workspace)


# Before the service imports the real module (which needs the Cassandra driver).
store_module = types.ModuleType("trustgraph.tables.config")
store_module.ConfigTableStore = MemoryConfigTableStore
sys.modules["trustgraph.tables.config"] = store_module

from trustgraph.config.service.service import Processor, default_ident  # noqa: E402

if __name__ == "__main__":
    Processor.launch(default_ident, __doc__)
