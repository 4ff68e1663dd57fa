"""Scopes, the default strategy and the replica context rules."""

import threading

import jax
import numpy as np
import pytest

import phalanx
from phalanx.errors import ReplicaContextError, ScopeError


def test_default_strategy_outside_scope():
    s = phalanx.get_strategy()
    assert s.num_replicas_in_sync == 1
    assert not phalanx.has_strategy()
    assert not phalanx.in_cross_replica_context()
    ctx = phalanx.get_replica_context()
    assert ctx is not None and ctx.replica_id_in_sync_group == 0
    assert ctx.all_reduce("sum", 3.0) == 3.0
    # The default strategy runs functions too, on one replica.
    assert float(s.run(lambda x: x + 1, args=(np.float32(1),))) == 2.0
    assert float(s.reduce("SUM", phalanx.PerReplica(np.array([5.0])))) == 5.0


def test_scope_sets_current_strategy_and_cross_replica_context():
    s = phalanx.MirroredStrategy(jax.devices()[:2])
    with s.scope() as entered:
        assert entered is s
        assert phalanx.get_strategy() is s
        assert phalanx.has_strategy()
        assert phalanx.in_cross_replica_context()
        assert phalanx.get_replica_context() is None
        with s.scope():  # the same strategy nests
            assert phalanx.get_strategy() is s
    assert phalanx.get_strategy() is not s
    assert not phalanx.has_strategy()


def test_replica_context_inside_run():
    s = phalanx.MirroredStrategy(jax.devices()[:2])
    seen = {}

    def fn():
        seen["cross"] = phalanx.in_cross_replica_context()
        seen["strategy"] = phalanx.get_strategy()
        seen["ctx"] = phalanx.get_replica_context()
        return phalanx.get_replica_context().replica_id_in_sync_group

    with s.scope():
        s.run(fn)
    assert seen["cross"] is False
    assert seen["strategy"] is s
    assert seen["ctx"].strategy is s and seen["ctx"].num_replicas_in_sync == 2


def test_nesting_different_strategies_raises():
    a = phalanx.MirroredStrategy(jax.devices()[:2])
    b = phalanx.OneDeviceStrategy()
    with a.scope(), pytest.raises(ScopeError, match="Mixing different strategies"), b.scope():
        pass
    # The failed entry left the stack as it was.
    assert not phalanx.has_strategy()


def test_scope_inside_run_raises():
    s = phalanx.MirroredStrategy(jax.devices()[:2])

    def fn():
        with s.scope():
            return 1.0

    with pytest.raises(ScopeError, match="inside strategy.run"):
        s.run(fn)


def test_default_scope_allows_a_strategy_inside():
    s = phalanx.OneDeviceStrategy()
    with phalanx.get_strategy().scope(), s.scope():
        assert phalanx.get_strategy() is s


def test_scopes_are_thread_local():
    s = phalanx.MirroredStrategy(jax.devices()[:2])
    seen = []
    with s.scope():
        t = threading.Thread(target=lambda: seen.append(phalanx.has_strategy()))
        t.start()
        t.join()
    assert seen == [False]


def test_compute_average_loss_needs_replica_context_without_batch_size():
    s = phalanx.OneDeviceStrategy()
    with s.scope(), pytest.raises(ReplicaContextError, match="cross-replica context"):
        phalanx.compute_average_loss(np.ones(4, np.float32))
