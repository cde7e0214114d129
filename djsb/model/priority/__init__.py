"""Priority plugins of the scheduler model, one policy per module."""

from djsb.model.priority.accounts import AccountSpec, AccountTree
from djsb.model.priority.base import PriorityContext, PriorityPlugin
from djsb.model.priority.fifo import FifoPriority
from djsb.model.priority.multifactor import MultifactorPriority, MultifactorWeights
from djsb.model.priority.presets import marenostrum4, preset
from djsb.model.priority.psp import PspAgingPriority

__all__ = ["AccountSpec", "AccountTree", "FifoPriority", "MultifactorPriority", "MultifactorWeights",
           "PriorityContext", "PriorityPlugin", "PspAgingPriority", "marenostrum4", "preset"]
