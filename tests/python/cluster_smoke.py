"""redis-py's RedisCluster against one zwindow node serving every slot:
discovery (CLUSTER SLOTS), keyed commands, a cross-slot refusal, pipelines
and the cluster-wide helpers. Run by tests/cluster.rs with ZWINDOW_PORT."""

import os
import sys

from redis import Redis
from redis.cluster import RedisCluster
from redis.exceptions import ResponseError

port = int(os.environ["ZWINDOW_PORT"])
rc = RedisCluster(host="127.0.0.1", port=port, decode_responses=True)
nodes = rc.get_nodes()
assert len(nodes) == 1 and nodes[0].port == port, nodes
assert rc.set("foo", "bar") is True
assert rc.get("foo") == "bar"
rc.mset_nonatomic({"a": "1", "b": "2", "{u}c": "3"})
assert rc.mget_nonatomic(["a", "b", "{u}c"]) == ["1", "2", "3"]
assert rc.keyslot("foo") == 12182
assert rc.cluster_keyslot("foo") == 12182
assert rc.cluster_countkeysinslot(12182) == 1
assert rc.cluster_get_keys_in_slot(12182, 10) == ["foo"]
info = rc.cluster_info()
assert info["cluster_state"] == "ok", info
# The node itself refuses keys of two slots (redis-py checks first).
single = Redis(host="127.0.0.1", port=port)
try:
    single.execute_command("MSET", "a", "1", "b", "2")
except ResponseError as e:
    assert type(e).__name__ == "ClusterCrossSlotError", e
    assert str(e) == "Keys in request don't hash to the same slot", e
else:
    sys.exit("MSET across slots was not refused")
single.close()
pipe = rc.pipeline()
pipe.set("{p}1", "x")
pipe.incr("{p}n")
pipe.get("{p}1")
assert pipe.execute() == [True, 1, "x"]
assert rc.dbsize() == 6
rc.close()
print("ok")
