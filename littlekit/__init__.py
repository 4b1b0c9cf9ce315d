"""littlekit: reusable logic for the LittleCurriculum filter, training and evaluation."""

__version__ = "0.1.0"
