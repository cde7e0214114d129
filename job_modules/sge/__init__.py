"""The Grid Engine job module (module.py), its pure output parsers (parsers.py) and job script
(batch.sh.j2)."""

from job_modules.sge.module import MODULE, SgeJobModule

__all__ = ["MODULE", "SgeJobModule"]
