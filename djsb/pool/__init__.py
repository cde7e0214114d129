"""A cycle-stealing pool with evictions and the miscreant-task policies of paper 002 (McGough et al.).

Modules: :mod:`~djsb.pool.power` (Table I), :mod:`~djsb.pool.computers` (clusters, opening
hours), :mod:`~djsb.pool.interactive` (users, reboots, failures), :mod:`~djsb.pool.tasks`
(tasks, runs, eviction causes), :mod:`~djsb.pool.abandon` (X0 ... D(m, d)),
:mod:`~djsb.pool.placement` (C1-C3), :mod:`~djsb.pool.event_loop` (the event loop),
:mod:`~djsb.pool.metrics`, :mod:`~djsb.pool.generator` and :mod:`~djsb.pool.history_csv`
(workloads), :mod:`~djsb.pool.config` with :mod:`~djsb.pool.readers`, :mod:`~djsb.pool.units`,
:mod:`~djsb.pool.runner` (``run_point``, ``run_tree``) and :mod:`~djsb.pool.plots`; the
``djsb pool`` command, which may run a config's sweep, is :mod:`djsb.sweep.pool_command`.
"""
