"""What a job asks of GPUs, in sbatch's terms: a count per node, per job or per task, of one type or any.

sbatch writes it four ways (sbatch(1), Slurm 22.05): ``--gpus-per-node=[type:]N`` and
``--gres=gpu[:type]:N`` (both N on each node the job gets), ``--gpus=[type:]N`` (N over the whole
job) and ``--gpus-per-task=[type:]N`` (N for each task). A workload reader turns whichever a record
gives into one :class:`GpuRequest`; the scheduler model places it (djsb/model/gpus.py). A job
without one asks no GPU and is placed exactly as before GPUs existed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Per = Literal["node", "job", "task"]
"""What a GPU count is counted over: each node of the job, the whole job, or each task."""

OPTIONS: dict[str, Per] = {"--gpus-per-node": "node", "--gres": "node", "--gpus": "job",
                           "--gpus-per-task": "task"}
"""The sbatch options asking GPUs, and what each counts over."""


@dataclass(frozen=True, slots=True)
class GpuRequest:
    """``count`` GPUs ``per`` node, job or task, of ``type`` (None: any type the nodes have)."""

    count: int
    per: Per = "node"
    type: str | None = None

    def __post_init__(self) -> None:
        if self.count < 1:
            raise ValueError(f"a GPU request asks one GPU at least, not {self.count}")
        if self.per not in ("node", "job", "task"):
            raise ValueError(f"GPUs are counted per node, job or task, not per {self.per!r}")

    @classmethod
    def from_option(cls, option: str, value: str) -> GpuRequest:
        """The request of one sbatch option and its value: ``--gres gpu:a100:2``, ``--gpus 4``,
        ``--gpus-per-task v100:1``... (ValueError saying what is wrong)."""
        per = OPTIONS.get(option)
        if per is None:
            raise ValueError(f"{option} asks no GPU: use one of {', '.join(OPTIONS)}")
        parts = value.split(":")
        if option == "--gres":
            if parts[0] != "gpu":
                raise ValueError(f"--gres={value}: only gpu is modelled")
            parts = parts[1:] or ["1"]  # --gres=gpu is one GPU per node
        if len(parts) > 2 or not parts[-1].isdigit():
            raise ValueError(f"{option}={value}: expected [type:]count")
        return cls(int(parts[-1]), per, parts[0] if len(parts) == 2 else None)

    def sbatch_option(self) -> str:
        """The one sbatch argument asking this request, ``--gpus-per-node=[type:]N``, ``--gpus=[type:]N``
        or ``--gpus-per-task=[type:]N`` (sbatch(1)): what :meth:`from_option` reads back. One argv word,
        to be quoted (shlex.join) where a shell reads it: the type comes from a workload."""
        option = next(name for name, per in OPTIONS.items() if per == self.per and name != "--gres")
        return f"{option}={'' if self.type is None else self.type + ':'}{self.count}"
