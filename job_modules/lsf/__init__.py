"""The IBM Spectrum LSF job module (module.py), its pure output parsers (parsers.py) and job script
(batch.sh.j2)."""

from job_modules.lsf.module import MODULE, LsfJobModule

__all__ = ["LsfJobModule", "MODULE"]
