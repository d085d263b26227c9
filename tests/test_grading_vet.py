"""The static vetting of answer cells (simtlab/grading/vet.py, rules in answer_rules.toml).

Every master's answers must pass (else grading would reject the course's own solutions), and
each way out of an answer cell that a determined student used must be rejected with the line
and the construct named.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from simtlab.grading.rebuild import load_master
from simtlab.grading.vet import course_names, load_rules, top_level_bindings, vet_answer

REPO = Path(__file__).resolve().parent.parent
MASTERS = sorted((REPO / "solutions").glob("[0-9]*.ipynb"))


def _context(master):
    cells = [c for c in master.nb.cells if c.get("cell_type") == "code"]
    role = lambda c: (c.get("metadata", {}).get("simtlab") or {}).get("role")  # noqa: E731
    names, imports = course_names([c.source for c in cells if role(c) in ("setup", "check", "hidden-check")])
    answers = {c.metadata["simtlab"]["id"]: c.source for c in cells if role(c) == "answer"}
    return names, imports, answers


@pytest.mark.parametrize("path", MASTERS, ids=lambda p: p.stem)
def test_every_master_answer_passes(path):
    master = load_master(path)
    names, imports, answers = _context(master)
    if not master.exercises:
        pytest.skip(f"{path.name} has no exercises")
    for sid, source in answers.items():
        rejected = vet_answer(source, chapter=path.name, protected=names, course_imports=imports,
                              own=top_level_bindings(source))
        assert rejected == [], f"{sid}: {[str(r) for r in rejected]}"


CH03 = dict(chapter="03_communication_patterns.ipynb", protected={"ch03", "np", "P", "cuda", "float32"},
            course_imports={"np": "numpy", "P": "simtlab.kernels.patterns", "cuda": "numba.cuda",
                            "float32": "numba.float32"}, own={"transpose_padded"})

# source -> (line, words the construct's description must hold)
ATTACKS = {
    "setattr through a built string": ("import numpy as np\nname = 'check' + '_transpose'\nsetattr(np, name, 1)",
                                       3, "`setattr`"),
    "importlib": ("import importlib\nm = importlib.import_module('simtlab.exercises')", 1, "import of `importlib`"),
    "__import__": ("m = __import__('sys')", 1, "`__import__`"),
    "sys.settrace": ("import sys\nsys.settrace(None)", 1, "import of `sys`"),
    "import hook through numpy": ("import numpy as np\nx = np.core", 2, "`.core`"),
    "magic %run": ("%run /course/solutions/03.ipynb", 1, "IPython magic"),
    "shell escape": ("def f():\n    pass\n!cat ../solutions/*", 3, "IPython magic"),
    "get_ipython transformers": ("ip = get_ipython()\nip.input_transformers_post.append(None)", 1,
                                 "`get_ipython`"),
    "dunder attribute": ("x = ().__class__.__base__.__subclasses__()", 1, "dunder"),
    "dunder string": ("key = '__globals__'", 1, "`__`"),
    "rebinding the check's module": ("ch03 = None", 1, "rebinds `ch03`"),
    "rebinding a built-in": ("def len(x):\n    return 0", 1, "built-in `len`"),
    "assignment to a module attribute": ("P.check = None", 1, "assignment to an attribute"),
    "wrapping simtlab.emulate": ("from simtlab.kernels import patterns\nx = patterns.np\nP.emulate = 1", 3,
                                 "`.emulate`"),
    "the course's kernel": ("transpose_padded = P.transpose_v3_padded", 1, "course's own kernel"),
    "the course's kernel imported": ("from simtlab.kernels.patterns import stencil1d_v2_shared as s", 1,
                                     "course's own kernel"),
    "import simtlab binds the package": ("import simtlab.kernels.patterns", 1, "binds `simtlab`"),
    "numpy file input": ("def f():\n    return np.fromfile('/proc/self/mem')", 2, "`.fromfile`"),
    "a class with a custom ==": ("class Always:\n    pass", 1, "class definition"),
    "global rebinding from a function": ("def f():\n    global ch03\n    ch03 = 1", 2, "`global`"),
    "try swallowing errors": ("def f():\n    try:\n        pass\n    except Exception:\n        pass", 2, "`try`"),
    "open": ("def f():\n    return open('/etc/passwd').read()", 2, "`open`"),
    "exec": ("def f():\n    exec('1')", 2, "`exec`"),
    "a top-level loop": ("while True:\n    pass", 1, "outside a function"),
    "mutating a library table": ("def f():\n    P.TRANSPOSES.update({})", 2, "changes an object"),
    "IPython history": ("x = _ih", 1, "`_ih`"),
    "SystemExit": ("def f():\n    raise SystemExit(0)", 2, "`SystemExit`"),
    "a relative import": ("from . import x", 1, "import from `.`"),
    "numba's CPU compiler (no bounds checks)": ("import numba\n@numba.njit\ndef peek(a, i):\n    return a[i]", 2,
                                                "`.njit`"),
    "numba.jit": ("import numba as nb\n@nb.jit\ndef peek(a, i):\n    return a[i]", 2, "`numba.jit`"),
    "from numba import jit": ("from numba import jit", 1, "`numba.jit`"),
    "numba's extension API": ("from numba.extending import intrinsic", 1, "`.extending`"),
}


@pytest.mark.parametrize("name", sorted(ATTACKS))
def test_attacks_are_rejected_with_line_and_construct(name):
    source, line, words = ATTACKS[name]
    rejected = vet_answer(source, **CH03)
    assert rejected, f"{name} was not rejected"
    assert any(r.line == line and words in r.construct for r in rejected), [str(r) for r in rejected]


def test_ordinary_answers_pass():
    ok = [
        "import numpy as np\nfrom numba import cuda, float32\nimport math\n",
        "TILE_PAD = 33\n\n@cuda.jit\ndef transpose_padded(a, out):\n    tile = cuda.shared.array((32, TILE_PAD), float32)\n"
        "    x, y = cuda.grid(2)\n    if x < a.shape[1] and y < a.shape[0]:\n        out[x, y] = a[y, x]\n",
        "def helper(v):\n    acc = 0\n    for i in range(len(v)):\n        acc += v[i]\n    return acc\n",
        "def f(xs):\n    return [x for x in xs if x > 0] + list(map(lambda _: 1, xs))\n",
        "from simtlab.kernels import patterns\nR = patterns.RADIUS\n",
        "def stub():\n    raise NotImplementedError('Exercise ch03.transpose: write it')\n",
    ]
    for source in ok:
        assert vet_answer(source, **CH03) == [], source


def test_rules_file_is_complete():
    rules = load_rules()
    for name in ("getattr", "setattr", "exec", "eval", "open", "__import__", "compile", "globals", "vars"):
        assert name in rules.forbidden_names
    assert "transpose_v3_padded" in rules.course_kernels("03_communication_patterns.ipynb")
    assert "stencil1d_v2_shared" in rules.course_kernels("03_communication_patterns.ipynb")
    assert rules.course_kernels("99_other.ipynb") == frozenset()


def test_deep_nesting_is_a_rejection_not_a_crash():
    source = "x = " + "(" * 200 + "1" + ")" * 200
    deep = "x = " + "[" * 5000 + "]" * 5000
    assert vet_answer(source, **CH03) == []
    assert vet_answer(deep, **CH03)  # the parser or the vetter gives up: a rejection


@pytest.mark.parametrize("chapter, source", [
    ("06_gemm.ipynb", "gemm_tiled = G.gemm_v3_tiled"),
    ("07_im2col.ipynb", "from simtlab.kernels.conv import im2col as unroll"),
    ("07_im2col.ipynb", "def conv_output_size(n, k, stride, pad):\n    return K.conv_geometry(n, n, k, stride, pad)"),
    ("08_cnn.ipynb", "maxpool = K.maxpool2"),
])
def test_later_chapters_course_kernels_are_not_answers(chapter, source):
    rejected = vet_answer(source, chapter=chapter)
    assert any("course's own kernel" in r.construct for r in rejected), [str(r) for r in rejected]
