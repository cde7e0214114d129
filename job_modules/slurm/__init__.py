"""The Slurm job module (module.py), its pure output parsers (parsers.py) and batch script (batch.sh.j2)."""

from job_modules.slurm.module import MODULE, SlurmJobModule

__all__ = ["MODULE", "SlurmJobModule"]
