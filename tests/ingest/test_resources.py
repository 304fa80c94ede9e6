from __future__ import annotations

from rayweave.cluster.settings import Settings
from rayweave.ingest.resources import NodeShape, PoolSize, plan_resources

LAPTOP = [NodeShape(cpus=2.0)]


def test_pools_and_a_read_task_fit_in_two_cpus() -> None:
    settings = Settings(ingest={"actor_cpus": 0.5, "dense_actors": 2})
    res = plan_resources(settings, LAPTOP)
    actors = res.dense_pool.max + res.sparse_pool.max + res.entity_pool.max
    assert actors == 4
    assert 2 * res.light + actors * res.model + res.task <= 0.9 * 2.0 + 1e-9


def test_large_clusters_keep_the_configured_fractions() -> None:
    res = plan_resources(Settings(ingest={"actor_cpus": 0.5}), [NodeShape(cpus=64.0)])
    assert res.model == 0.5


def test_fused_actors_reserve_little_and_run_with_a_nodes_threads() -> None:
    # A deployed Serve app holds about 0.7 of 2 CPUs: a fused actor must still be placed.
    res = plan_resources(Settings(), LAPTOP)
    assert res.fused + res.task <= 2.0 - 0.7
    assert res.fused_threads == 2
    two = plan_resources(Settings(ingest={"fused_actors": 2}), LAPTOP)
    assert two.fused <= res.fused
    assert two.fused_threads == 1
    assert plan_resources(Settings(), [NodeShape(cpus=16.0)] * 4).fused_threads == 16


def test_one_node_gets_one_fused_actor() -> None:
    res = plan_resources(Settings(), LAPTOP)
    assert res.fused_pool == PoolSize(1, 1)
    assert res.fused_pool.strategy_kwargs() == {"size": 1}


def test_fused_pool_has_one_actor_per_node() -> None:
    nodes = [NodeShape(cpus=2.0), NodeShape(cpus=1.0), NodeShape(cpus=1.0)]
    res = plan_resources(Settings(), nodes)
    assert res.fused_pool == PoolSize(1, 3)
    assert res.fused_pool.strategy_kwargs() == {"min_size": 1, "max_size": 3, "initial_size": 3}
    assert res.fused <= 1.0  # fits on the 1-CPU workers
    # A pinned size wins.
    assert plan_resources(Settings(ingest={"fused_actors": 1}), nodes).fused_pool == PoolSize(1, 1)


def test_gpu_pools_follow_the_clusters_gpus() -> None:
    forty = [NodeShape(cpus=16.0, gpus=1.0)] * 40
    res = plan_resources(Settings(ingest={"actor_gpus": 0.5}), forty)
    assert res.dense_pool == PoolSize(1, 80)
    assert res.sparse_pool == PoolSize(1, 80)
    assert res.entity_pool == PoolSize(1, 320)  # spaCy: one actor per two CPUs of a node
    assert res.gpus == 0.5
    cpu_only = plan_resources(Settings(), forty)
    assert cpu_only.dense_pool == PoolSize(1, 1)  # without GPUs the fused layout runs


def test_no_live_nodes_plans_for_one_core() -> None:
    res = plan_resources(Settings(), [])
    assert res.fused_pool == PoolSize(1, 1)
    assert res.fused_threads == 1


def test_entity_actors_follow_each_nodes_cpus() -> None:
    settings = Settings(ingest={"actor_gpus": 0.25, "dense_actors": 2, "sparse_actors": 2})
    gpu_node = plan_resources(settings, [NodeShape(cpus=16.0, gpus=1.0)])
    assert gpu_node.entity_pool == PoolSize(1, 8)
    assert 2 * gpu_node.light + 12 * gpu_node.model + gpu_node.task <= 0.9 * 16
    small = [NodeShape(cpus=2.0), NodeShape(cpus=1.0), NodeShape(cpus=1.0)]
    assert plan_resources(settings, small).entity_pool == PoolSize(1, 3)  # at least one per node
    pinned = Settings(ingest={"entity_actors": 2})
    assert plan_resources(pinned, [NodeShape(cpus=16.0)]).entity_pool == PoolSize(2, 2)
