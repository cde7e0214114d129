"""What a Slurm site's own files and answers say, as the model takes it: slurm.conf with its
Includes and gres.conf (``slurm_conf``, the keys Slurm reads in ``slurm_conf_keys``), their
settings and sacctmgr's answers turned into the model's (``slurm_config``), slurmctld's log
(``slurmctld_log``), node events and reservations (``site_events``), the decay thread's phase
(``recompute_watch``). A library that neither ``djsb calibrate`` (a live Slurm) nor ``djsb history``
(a recorded one) owns: both read a site through it."""
