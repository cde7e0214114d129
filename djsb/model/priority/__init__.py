"""Priority plugins of the scheduler model, one policy per module."""

from djsb.model.priority.base import PriorityContext, PriorityPlugin
from djsb.model.priority.fifo import FifoPriority

__all__ = ["FifoPriority", "PriorityContext", "PriorityPlugin"]
