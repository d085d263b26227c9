"""Student notebooks in ``chapters/`` are built from the masters in ``solutions/``.

See :mod:`simtlab.notebooks.build` for the cell-metadata convention.
"""

from .build import (
    MasterNotebookError,
    StudentWorkError,
    SyncProblem,
    build_all,
    build_student_notebook,
    notebook_bytes,
    read_notebook,
    student_work,
    validate_master,
)

__all__ = [
    "MasterNotebookError",
    "StudentWorkError",
    "SyncProblem",
    "build_all",
    "build_student_notebook",
    "notebook_bytes",
    "read_notebook",
    "student_work",
    "validate_master",
]
