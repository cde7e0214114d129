"""Abandon policies of paper 002 sec. III: what to do with a task each time it is deallocated.

One file per family (deallocation counts with D(m, d), accrued and individual time, random,
percentile), each class registered by name in :data:`djsb.pool.abandon.base.ABANDON_POLICIES`;
a config names one with ``policy.abandon.rule`` and gives its parameters beside it.
"""

from djsb.pool.abandon.base import ABANDON_POLICIES, AbandonPolicy, Evidence, Verdict, build_abandon

__all__ = ["ABANDON_POLICIES", "AbandonPolicy", "Evidence", "Verdict", "build_abandon"]
