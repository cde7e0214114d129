"""What a job asks of GPUs, in sbatch's terms: a count per node, per job or per task, of one type or any.

sbatch writes it four ways (sbatch(1), Slurm 22.05): ``--gpus-per-node=[type:]N`` and
``--gres=gpu[:type]:N`` (both N on each node the job gets), ``--gpus=[type:]N`` (N over the whole
job) and ``--gpus-per-task=[type:]N`` (N for each task). A workload reader turns whichever a record
gives into one :class:`GpuRequest`; the scheduler model places it (djsb/model/gpus.py). A job
without one asks no GPU and is placed exactly as before GPUs existed.

Two more options make the GPUs bring their own CPUs and memory: ``--cpus-per-gpu=C`` (each GPU the
job holds on a node comes with C of its CPUs there) and ``--mem-per-gpu=M`` (with M MiB of the
node's memory; sbatch refuses it beside ``--mem`` or ``--mem-per-cpu``). A request carries them, and
the job's ``--cpus-per-task`` when a site's record gives it: a job asking it gets no DefCpuPerGPU
(cons_common job_test.c ``_set_gpu_defaults``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Literal

from djsb import slurm_text

Per = Literal["node", "job", "task"]
"""What a GPU count is counted over: each node of the job, the whole job, or each task."""

OPTIONS: dict[str, Per] = {"--gpus-per-node": "node", "--gres": "node", "--gpus": "job",
                           "--gpus-per-task": "task", "-G": "job"}
"""The sbatch options asking GPUs (``-G`` is ``--gpus``), and what each counts over."""
BRINGS = ("--cpus-per-gpu", "--mem-per-gpu")
"""The sbatch options giving what each GPU brings (:meth:`GpuRequest.bringing`)."""


@dataclass(frozen=True, slots=True)
class GpuRequest:
    """``count`` GPUs ``per`` node, job or task, of ``type`` (None: any type the nodes have), each
    with ``cpus_per_gpu`` CPUs and ``mem_per_gpu`` MiB of memory of its node (None: not asked).
    ``cpus_per_task`` is the job's own ``--cpus-per-task`` (None: not asked, or not known), which
    only keeps the partition's DefCpuPerGPU off its GPUs (djsb/model/job_memory.py); a site's
    SubmitLine gives it, and a workload's ``gpus`` column neither writes nor reads it (like a job's
    ``--requeue``, it is a sacct dump's alone)."""

    count: int
    per: Per = "node"
    type: str | None = None
    cpus_per_gpu: int | None = None
    mem_per_gpu: float | None = None
    cpus_per_task: int | None = None

    def __post_init__(self) -> None:
        if self.count < 1:
            raise ValueError(f"a GPU request asks one GPU at least, not {self.count}")
        if self.per not in ("node", "job", "task"):
            raise ValueError(f"GPUs are counted per node, job or task, not per {self.per!r}")
        if self.cpus_per_gpu is not None and self.cpus_per_gpu < 1:
            raise ValueError(f"--cpus-per-gpu asks one CPU at least, not {self.cpus_per_gpu}")
        if self.mem_per_gpu is not None and not self.mem_per_gpu > 0:
            raise ValueError(f"--mem-per-gpu asks some memory, not {self.mem_per_gpu}")
        if self.cpus_per_task is not None and self.cpus_per_task < 1:
            raise ValueError(f"--cpus-per-task asks one CPU at least, not {self.cpus_per_task}")

    def tasks(self, cpus: int) -> int:
        """The tasks of a trace job of ``cpus`` CPUs asking this: one a CPU, or with GPUs per task
        and ``cpus_per_gpu``, one per ``count * cpus_per_gpu`` CPUs (slurmctld sets
        ``cpus_per_task = cpus_per_gres * gres_per_task``: gres.c ``_test_gres_cnt``), at least one."""
        if self.per == "task" and self.cpus_per_gpu is not None:
            return max(1, cpus // (self.count * self.cpus_per_gpu))
        return cpus

    def sbatch_options(self) -> tuple[str, ...]:
        """The request as the sbatch options that ask it: ``--gpus-per-node=a100:2``, ``--gpus=4``,
        ``--gpus-per-task=1``, then ``--cpus-per-gpu=C`` and ``--mem-per-gpu=MM`` if it asks them
        (what :meth:`from_text` reads back, joined by spaces). Each one argv word, to be quoted
        (shlex.join) where a shell reads it: the type comes from a workload."""
        option = next(name for name, per in OPTIONS.items() if per == self.per and name != "--gres")
        words = [f"{option}={self.type}:{self.count}" if self.type else f"{option}={self.count}"]
        if self.cpus_per_gpu is not None:
            words.append(f"--cpus-per-gpu={self.cpus_per_gpu}")
        if self.mem_per_gpu is not None:
            words.append(f"--mem-per-gpu={self.mem_per_gpu:g}M")
        return tuple(words)

    @classmethod
    def from_text(cls, text: str) -> GpuRequest | None:
        """The request of sbatch options written ``--option=value`` and separated by spaces
        (:meth:`sbatch_options`, or ``--gres=gpu:2``): one asking GPUs, then maybe
        ``--cpus-per-gpu`` and ``--mem-per-gpu``; None for one that asks no GPU. ValueError saying
        what is wrong."""
        options = []
        for word in text.split():
            option, equals, value = word.partition("=")
            if not equals:
                raise ValueError(f"{text!r}: expected an sbatch GPU option: --gpus-per-node=[type:]N, "
                                 "--gpus=..., --gpus-per-task=... or --gres=gpu[:type]:N, then maybe "
                                 "--cpus-per-gpu=C and --mem-per-gpu=M")
            options.append((option, value))
        if not options:
            raise ValueError("expected an sbatch GPU option, got nothing")
        request = cls.from_option(*options[0])
        extra = dict(options[1:])
        if set(extra) - set(BRINGS):
            raise ValueError(f"{text!r}: after the GPU option only {' and '.join(BRINGS)} are read")
        return request.bringing(extra) if request is not None else None

    def bringing(self, options: Mapping[str, str]) -> GpuRequest:
        """This request with the ``--cpus-per-gpu`` and ``--mem-per-gpu`` of ``options`` (option name:
        value as sbatch takes it; memory in MiB unless suffixed K, M, G or T). ValueError saying
        which is wrong."""
        cpus, memory = options.get("--cpus-per-gpu"), options.get("--mem-per-gpu")
        if cpus is None and memory is None:
            return self
        if cpus is not None and not cpus.isdigit():
            raise ValueError(f"--cpus-per-gpu={cpus}: not a CPU count")
        try:
            mem_per_gpu = slurm_text.mebibytes(memory) if memory is not None else None
        except ValueError as err:
            raise ValueError(f"--mem-per-gpu={memory}: {err}") from None
        return replace(self, cpus_per_gpu=int(cpus) if cpus is not None else None, mem_per_gpu=mem_per_gpu)

    @classmethod
    def from_option(cls, option: str, value: str) -> GpuRequest | None:
        """The request of one sbatch option and its value: ``--gres gpu:a100:2``, ``--gpus 4``,
        ``--gpus-per-task v100:1``...; None for a ``--gres`` that asks no GPU (``--gres=nic:1``,
        ``--gres=gpu:0``).
        ValueError saying what is wrong."""
        per = OPTIONS.get(option)
        if per is None:
            raise ValueError(f"{option} asks no GPU: use one of {', '.join(OPTIONS)}")
        if option == "--gres":
            return cls._from_gres(value)
        parts = value.split(":")
        if len(parts) > 2 or not parts[-1].isdigit():
            raise ValueError(f"{option}={value}: expected [type:]count")
        return cls(int(parts[-1]), per, parts[0] if len(parts) == 2 else None)

    @classmethod
    def _from_gres(cls, value: str) -> GpuRequest | None:
        """``--gres``: a comma-separated list of ``name[[:type]:count]`` (sbatch(1); count 1 when
        left out, so ``gpu:a100`` is one a100), of which only ``gpu`` is a GPU."""
        items = [item.split(":") for item in value.split(",") if item.strip()]
        gpus = [parts[1:] for parts in items if parts[0].strip() == "gpu"]
        if len(gpus) > 1:
            raise ValueError(f"--gres={value}: GPUs of several types in one job are not modelled")
        if not gpus:
            return None
        parts = gpus[0]
        if len(parts) > 2 or (len(parts) == 2 and not parts[1].isdigit()):
            raise ValueError(f"--gres={value}: expected gpu[[:type]:count]")
        if parts and parts[-1].isdigit():
            count = int(parts[-1])
            return cls(count, "node", parts[0] if len(parts) == 2 else None) if count else None
        return cls(1, "node", parts[0] if parts else None)
