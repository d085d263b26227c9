"""What a student's answer cell may import from simtlab besides the kernels: the stub's
exception and the hints.

``simtlab build`` writes ``from simtlab.student import NotWrittenYet, hint`` at the top of every
answer cell that holds a Python stub; the grader's answer rules (grading/answer_rules.toml) allow
this module and no other part of the package, so the line may stay in a finished answer.
"""

from .exercises.hints import hint
from .exercises.report import NotWrittenYet

__all__ = ["NotWrittenYet", "hint"]
