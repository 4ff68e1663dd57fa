"""Child script: 30 agreements between the processes, then the keys left on the coordinator."""

import os

os.environ["JAX_PLATFORMS"] = "cpu"

import phalanx.cluster

phalanx.cluster.initialize()

from phalanx.cluster import _agree, _kv  # noqa: E402

me = _kv.process_id()
series = _agree.new_round()
for k in range(30):
    mine = (k + me) % 3 != 0
    answers = _agree.all_have(f"{series}/{k}", mine, timeout_s=20)
    expected = [(k + p) % 3 != 0 for p in range(_kv.num_processes())]
    assert answers == expected, (k, answers, expected)
_kv.barrier("test/agreed", 20)
left = _kv.client().key_value_dir_get(_kv.PREFIX)
print(f"process {me} agreed 30 times; keys left {len(left)}", flush=True)
