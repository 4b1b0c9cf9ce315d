"""Filter stages. Each stage scores a text, then a separate rule turns the score into a decision."""

from littlekit.stages.base import Decision, Stage

__all__ = ["Decision", "Stage"]
