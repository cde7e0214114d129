"""Workflows (DAGs of jobs) and Autosubmit's wrapper strategies on the model (paper 004 sec. 2.8)."""
