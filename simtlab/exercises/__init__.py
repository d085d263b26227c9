"""The checks behind each exercise's check cell (one module per chapter), the stub's exception
and the progressive hints."""

from .hints import hint
from .report import CheckFailed, ExerciseNotWritten, NotWrittenYet

__all__ = ["CheckFailed", "ExerciseNotWritten", "NotWrittenYet", "hint"]
