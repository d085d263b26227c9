"""Kernels whose shared/local array shapes numba may or may not accept at compile time.

Shared by tests/test_static_checks.py (the emulator's check, on the CPU) and
tests/test_static_checks_gpu.py (numba-cuda compiling the same kernels). Each kernel takes a
float32 array ``a`` and, when it needs one, an int32 ``n``; the lists at the bottom say which
the emulator must refuse (and why) and which it must run.
"""

import math

import numpy as np
from numba import cuda, float32

from simtlab.kernels import reduction as R

TILE = 16
TILE_PAD = TILE + 1          # arithmetic at module level is fine: numba sees the value
SHAPE = (TILE, TILE_PAD)


@cuda.jit
def shared_from_argument(a, n):
    s = cuda.shared.array(n, float32)
    s[0] = 1.0
    a[0] = s[0]


@cuda.jit
def shared_from_shape(a):
    s = cuda.shared.array(a.shape[0], float32)
    s[0] = 1.0
    a[0] = s[0]


@cuda.jit
def shared_from_len(a):
    s = cuda.shared.array(len(a), float32)
    s[0] = 1.0
    a[0] = s[0]


@cuda.jit
def shared_from_block_dim(a):
    s = cuda.shared.array(cuda.blockDim.x, float32)
    s[0] = 1.0
    a[0] = s[0]


@cuda.jit
def shared_from_a_local_of_an_argument(a, n):
    size = n * 2
    s = cuda.shared.array((size, TILE), float32)
    s[0, 0] = 1.0
    a[0] = s[0, 0]


@cuda.jit
def local_from_argument(a, n):
    s = cuda.local.array(n, float32)
    s[0] = 1.0
    a[0] = s[0]


@cuda.jit
def shared_literal(a):
    s = cuda.shared.array(32, float32)
    s[0] = 1.0
    a[0] = s[0]


@cuda.jit
def shared_module_constant(a):
    s = cuda.shared.array(TILE, float32)
    s[0] = 1.0
    a[0] = s[0]


@cuda.jit
def shared_constant_also_in_an_item_assignment(a):
    # `s[0 // TILE] = ...` reads TILE; it does not make TILE a variable
    s = cuda.shared.array(TILE, float32)
    s[0 // TILE] = a[1]
    a[0] = s[0] + 1.0 - a[1]


@cuda.jit
def shared_tuple_with_arithmetic(a):
    s = cuda.shared.array((TILE, TILE + 1), float32)
    s[0, 0] = 1.0
    a[0] = s[0, 0]


@cuda.jit
def shared_from_a_product(a):
    s = cuda.shared.array(TILE * 2, float32)
    s[0] = 1.0
    a[0] = s[0]


@cuda.jit
def shared_from_a_local_product(a):
    size = TILE * 2
    s = cuda.shared.array(size, float32)
    s[0] = 1.0
    a[0] = s[0]


@cuda.jit
def shared_from_warpsize(a):
    s = cuda.shared.array(cuda.warpsize, float32)
    s[0] = 1.0
    a[0] = s[0]


@cuda.jit
def shared_tuple_of_constants(a):
    s = cuda.shared.array((TILE, TILE_PAD), float32)
    s[0, 0] = 1.0
    a[0] = s[0, 0]


@cuda.jit
def shared_global_tuple(a):
    s = cuda.shared.array(SHAPE, float32)
    s[0, 0] = 1.0
    a[0] = s[0, 0]


@cuda.jit
def shared_module_attribute(a):
    s = cuda.shared.array(R.BLOCK, float32)
    s[0] = 1.0
    a[0] = s[0]


@cuda.jit
def shared_local_copy_of_a_constant(a):
    size = TILE
    s = cuda.shared.array(size, float32)
    s[0] = 1.0
    a[0] = s[0]


@cuda.jit
def shared_keyword_shape(a):
    s = cuda.shared.array(shape=TILE, dtype=float32)
    s[0] = 1.0
    a[0] = s[0]


@cuda.jit
def shared_dynamic(a):
    s = cuda.shared.array(0, float32)
    s[0] = 1.0
    a[0] = s[0]


@cuda.jit
def local_module_constant(a):
    s = cuda.local.array(TILE, float32)
    s[0] = 1.0
    a[0] = s[0]


@cuda.jit
def returns_a_value(a):
    a[0] = 1.0
    return a[0]


@cuda.jit
def allocates_with_numpy(a):
    t = np.zeros(4, np.float32)
    t[0] = 1.0
    a[0] = t[0]


@cuda.jit
def allocates_like(a):
    t = np.empty_like(a)
    t[0] = 1.0
    a[0] = t[0]


@cuda.jit
def copies_a_slice(a):
    t = a[0:4].copy()
    a[0] = t[0]


@cuda.jit
def builds_a_list(a):
    t = [1.0, 2.0]
    a[0] = t[0]


@cuda.jit
def builds_a_list_comprehension(a):
    t = [a[j] for j in range(2)]
    a[0] = t[0]


@cuda.jit
def builds_a_dict(a):
    t = {0: 1.0}
    a[0] = t[0]


@cuda.jit
def prints_an_fstring(a):
    a[0] = 1.0
    print(f"a[0] = {a[0]}")


@cuda.jit
def leaves_early_with_a_bare_return(a):
    if cuda.threadIdx.x > 0:
        return
    a[0] = 1.0


@cuda.jit
def uses_a_tuple_math_and_plain_print(a):
    t = (1.0, 4.0)
    a[0] = math.sqrt(t[1]) - t[0]
    if cuda.threadIdx.x == 0:
        print("a[0] =", a[0])


@cuda.jit
def uses_np_sqrt(a):
    a[0] = np.sqrt(a[1])


@cuda.jit
def uses_np_exp(a):
    a[0] = np.exp(a[1])


@cuda.jit
def uses_np_abs(a):
    a[0] = np.abs(a[1])


@cuda.jit
def uses_np_floor(a):
    a[0] = np.floor(a[1])


@cuda.jit
def uses_np_max(a):
    a[0] = np.max(a)


@cuda.jit
def uses_np_dot(a):
    a[0] = np.dot(a, a)


@cuda.jit
def uses_numpy_that_compiles(a):
    x = np.float32(np.maximum(a[1], np.float32(1.0)))
    a[0] = np.log(x) + np.tanh(a[2] * 0.0) + 1.0 + np.float32(np.isnan(x))


@cuda.jit
def local_constant_in_a_store_index(a):
    # a store into s[TILE - 1] binds no name: TILE stays a constant for the shape above
    s = cuda.local.array(TILE, float32)
    s[TILE - 1] = a[1] + 1.0
    a[0] = s[TILE - 1]


#: (kernel, takes n, what the error must name)
REFUSED = [
    (shared_from_argument, True, "`n`, a kernel argument, known only at launch"),
    (shared_from_shape, False, "`a.shape`, the size of an argument"),
    (shared_from_len, False, "`len(a)`, the size of an argument"),
    (shared_from_block_dim, False, "`cuda.blockDim.x`, a property of the launch"),
    (shared_from_warpsize, False, "`cuda.warpsize`, a property of the launch"),
    (shared_from_a_local_of_an_argument, True, "`size`, computed from `n`, a kernel argument"),
    (shared_tuple_with_arithmetic, False, "`TILE + 1`, an expression"),
    (shared_from_a_product, False, "`TILE * 2`, an expression"),
    (shared_from_a_local_product, False, "`size`, computed from `TILE * 2`, an expression"),
    (shared_module_attribute, False, "`R.BLOCK`, a module attribute"),
    (local_from_argument, True, "`n`, a kernel argument"),
    (returns_a_value, False, "a kernel cannot return a value (`return a[0]`)"),
    (allocates_with_numpy, False, "`np.zeros(4, np.float32)` allocates a new array"),
    (allocates_like, False, "`np.empty_like(a)` allocates a new array"),
    (copies_a_slice, False, "`a[0:4].copy()` copies an array into a new one"),
    (builds_a_list, False, "`[1.0, 2.0]` builds a Python list"),
    (builds_a_list_comprehension, False, "`[a[j] for j in range(2)]` builds a Python list"),
    (builds_a_dict, False, "`{0: 1.0}` builds a Python dict"),
    (prints_an_fstring, False, "is an f-string, and a GPU thread cannot format strings"),
    (uses_np_sqrt, False, "numba-cuda cannot compile np.sqrt in a kernel"),
    (uses_np_exp, False, "numba-cuda cannot compile np.exp in a kernel"),
    (uses_np_abs, False, "numba-cuda cannot compile np.abs in a kernel"),
    (uses_np_floor, False, "numba-cuda cannot compile np.floor in a kernel"),
    (uses_np_max, False, "numba-cuda cannot compile np.max in a kernel"),
    (uses_np_dot, False, "numba-cuda cannot compile np.dot in a kernel"),
]

#: (kernel, dynamic shared bytes)
ACCEPTED = [
    (shared_literal, 0),
    (shared_module_constant, 0),
    (shared_constant_also_in_an_item_assignment, 0),
    (shared_tuple_of_constants, 0),
    (shared_local_copy_of_a_constant, 0),
    (shared_global_tuple, 0),
    (leaves_early_with_a_bare_return, 0),
    (uses_a_tuple_math_and_plain_print, 0),
    (uses_numpy_that_compiles, 0),
    (shared_keyword_shape, 0),
    (shared_dynamic, 4),
    (local_module_constant, 0),
    (local_constant_in_a_store_index, 0),
]
