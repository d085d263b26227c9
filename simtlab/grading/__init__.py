"""Grade students' notebooks against the masters: ``simtlab grade`` (see docs/INSTRUCTORS.md).

- :mod:`.rebuild`: the notebook to grade, made of the master's cells and the student's answers;
- :mod:`.vet`: the static allowlist each answer cell must pass before it runs (``answer_rules.toml``);
- :mod:`.isolated` and :mod:`.sandbox`: where the points come from: each check in a fresh process
  holding only the vetted answers and the master's cells;
- :mod:`.contain`, :mod:`.reaper` and :mod:`.cgroups`: nothing a run starts outlives it; as root,
  each run has a uid of its own, no network, its own pids and temp folders, and a cgroup;
- :mod:`.secure`: what of a master never reaches a student (the feedback notebook, messages);
- :mod:`.run`: runs the feedback notebook under nbval in a subprocess, with timeouts and a memory cap;
- :mod:`.nbplugin`: the pytest plugin that records how each cell really ended;
- :mod:`.gradebook`: finds submissions, grades them in parallel, writes the gradebook;
- :mod:`.feedback`: each student's feedback file.
"""

from .gradebook import GradeOptions, discover, grade_folder, load_masters, student_row, write_gradebook
from .rebuild import NotANotebook, load_master, parse_submission, rebuild
from .run import DEFAULT_MEMORY_LIMIT, run_notebook

__all__ = [
    "DEFAULT_MEMORY_LIMIT",
    "GradeOptions",
    "NotANotebook",
    "discover",
    "grade_folder",
    "load_master",
    "load_masters",
    "parse_submission",
    "rebuild",
    "run_notebook",
    "student_row",
    "write_gradebook",
]
