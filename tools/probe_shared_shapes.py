"""Which shared-array shapes does numba-cuda accept at compile time? Run on a GPU machine:
    PYTHONPATH=/tmp/site python3 tools/probe_shared_shapes.py
(the answers decide what simtlab/emulator/static_checks.py refuses)."""
from numba import cuda, float32
TILE = 16
def copy_local(a):
    T = TILE
    s = cuda.shared.array(T, float32); s[0] = 1.0; a[0] = s[0]
def product(a):
    s = cuda.shared.array(TILE * 2, float32); s[0] = 1.0; a[0] = s[0]
def warpsize(a):
    s = cuda.shared.array(cuda.warpsize, float32); s[0] = 1.0; a[0] = s[0]
def tuple_expr(a):
    s = cuda.shared.array((TILE, TILE + 1), float32); s[0, 0] = 1.0; a[0] = s[0, 0]
def floordiv(a):
    s = cuda.shared.array(TILE // 2, float32); s[0] = 1.0; a[0] = s[0]
def arg(a, n):
    s = cuda.shared.array(n, float32); s[0] = 1.0; a[0] = s[0]
for f, sig in [(copy_local, "void(float32[:])"), (product, "void(float32[:])"), (warpsize, "void(float32[:])"),
               (tuple_expr, "void(float32[:])"), (floordiv, "void(float32[:])"), (arg, "void(float32[:], int32)")]:
    try:
        cuda.jit(sig)(f); print(f.__name__, "COMPILES")
    except Exception as e:
        print(f.__name__, "REFUSED", type(e).__name__, str(e).splitlines()[0][:200])
