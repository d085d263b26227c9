"""Ground truth from the GPU for the emulator's numerics (run on the H100 by tools/device_gpu_tests.sh's wheels): bit intrinsics (values and numba's
types), ballot, 64-bit wrap, float64 math bits against NumPy and Python's math, and which
float expressions NVVM contracts into FMAs. Writes JSON to $OUT/numerics_probe.json."""
import json, math, os, sys
from fractions import Fraction
import numpy as np
from numba import cuda, float32, float64, int32, int64, uint32, uint64

out_dir = os.environ.get("OUT", "/tmp")
R = {}

# ---- bit intrinsics -----------------------------------------------------------------------------
vals = [0, 1, 2, -1, -2, 3, 255, 2**31 - 1, -2**31, 2**40, 2**63 - 1, -2**63, 12345678901234, 0x80000000, 0xFFFFFFFF]
for tname, t in (("int32", np.int32), ("uint32", np.uint32), ("int64", np.int64), ("uint64", np.uint64)):
    xs = np.array([v for v in vals], dtype=np.int64).astype(t)  # wraps
    res = {}
    for fname in ("popc", "clz", "ffs", "brev"):
        src = f"""
def k(x, o):
    i = cuda.grid(1)
    if i < x.size:
        o[i] = cuda.{fname}(x[i])
"""
        ns = {"cuda": cuda}
        exec(src, ns)
        kern = cuda.jit(ns["k"])
        for odt in (np.int64, np.uint64):
          try:
            o = np.zeros(len(xs), odt)
            kern[1, 32](xs, o)
            res[f"{fname}->{np.dtype(odt).name}"] = [int(v) for v in o]
          except Exception as e:
            res[f"{fname}->{np.dtype(odt).name}"] = repr(e)[:300]
        try:
            sig = kern.overloads
            res[f"{fname}_types"] = [str(s) for s in kern.signatures]
        except Exception as e:
            res[f"{fname}_types"] = repr(e)
        # numba's inferred type of the intrinsic's result
        try:
            ov = list(kern.overloads.values())[0]
            res[f"{fname}_restype"] = str(ov.type_annotation.typemap.get("$" , ""))
        except Exception:
            pass
    R[f"intrinsics_{tname}"] = {"inputs": [int(v) for v in xs], **res}


# the type numba gives each intrinsic's result: store it into a float64 so the type does not matter,
# and read the typemap by compiling with a typed local
def result_type(fname, argty):
    src = f"""
def k(x, o):
    r = cuda.{fname}(x[0])
    o[0] = r
"""
    ns = {"cuda": cuda}
    exec(src, ns)
    kern = cuda.jit(ns["k"])
    x = np.zeros(1, argty)
    o = np.zeros(1, np.float64)
    kern[1, 1](x, o)
    ov = list(kern.overloads.values())[0]
    tm = ov.type_annotation.typemap
    return str(tm.get("r", "?"))

R["intrinsic_result_types"] = {}
for f in ("popc", "clz", "ffs", "brev"):
    for t in (np.int32, np.uint32, np.int64, np.uint64):
        try:
            R["intrinsic_result_types"][f"{f}({np.dtype(t).name})"] = result_type(f, t)
        except Exception as e:
            R["intrinsic_result_types"][f"{f}({np.dtype(t).name})"] = repr(e)[:300]


# ---- ballot ----------------------------------------------------------------------------------------
@cuda.jit
def ballot_k(o, o2, o3):
    lane = cuda.laneid
    b = cuda.ballot_sync(0xFFFFFFFF, lane >= 16)
    o[lane] = b
    o2[lane] = cuda.popc(b)
    a = cuda.activemask()
    o3[lane] = a

o = np.zeros(32, np.int64); o2 = np.zeros(32, np.int64); o3 = np.zeros(32, np.int64)
ballot_k[1, 32](o, o2, o3)
R["ballot"] = {"value": int(o[0]), "popc": int(o2[0]), "activemask": int(o3[0])}
try:
    ov = list(ballot_k.overloads.values())[0]
    tm = ov.type_annotation.typemap
    R["ballot"]["types"] = {k: str(tm[k]) for k in ("b", "a") if k in tm}
except Exception as e:
    R["ballot"]["types"] = repr(e)[:300]

# partial last warp ballot
@cuda.jit
def ballot_partial(o):
    i = cuda.threadIdx.x
    b = cuda.ballot_sync(0xFFFFFFFF, i % 2 == 0)
    o[i] = b
o = np.zeros(40, np.int64)
try:
    ballot_partial[1, 40](o)
    R["ballot_partial_40"] = [int(v) for v in o]
except Exception as e:
    R["ballot_partial_40"] = repr(e)

@cuda.jit
def ballot_partial_active(o):
    i = cuda.threadIdx.x
    b = cuda.ballot_sync(cuda.activemask(), i % 2 == 0)
    o[i] = b
o = np.zeros(40, np.int64)
ballot_partial_active[1, 40](o)
R["ballot_partial_40_activemask"] = [int(v) for v in o]

# match
@cuda.jit
def match_k(x, o1, o2, o3):
    i = cuda.threadIdx.x
    o1[i] = cuda.match_any_sync(0xFFFFFFFF, x[i])
    m, p = cuda.match_all_sync(0xFFFFFFFF, x[i])
    o2[i] = m
    o3[i] = p
x = (np.arange(32) % 3).astype(np.int32)
o1 = np.zeros(32, np.int64); o2 = np.zeros(32, np.int64); o3 = np.zeros(32, np.int64)
match_k[1, 32](x, o1, o2, o3)
R["match"] = {"any": [int(v) for v in o1], "all": [int(v) for v in o2], "pred": [int(v) for v in o3]}
x[:] = 7
match_k[1, 32](x, o1, o2, o3)
R["match_same"] = {"any": [int(v) for v in o1], "all": [int(v) for v in o2], "pred": [int(v) for v in o3]}

# ---- 64-bit wrap -------------------------------------------------------------------------------------
@cuda.jit
def hash_k(o):
    i = cuda.grid(1)
    if i < o.size:
        o[i] = (i * 6364136223846793005 + 1442695040888963407) >> 33

o = np.zeros(200, np.int64)
hash_k[1, 256](o)
R["hash_int64"] = [int(v) for v in o]

@cuda.jit
def hash_u(x, o):
    i = cuda.grid(1)
    if i < o.size:
        h = x[i]
        h = h * np.uint64(6364136223846793005) + np.uint64(1442695040888963407)
        o[i] = h >> np.uint64(33)
x = np.arange(200, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15)
o = np.zeros(200, np.uint64)
hash_u[1, 256](x, o)
R["hash_uint64"] = {"x": [int(v) for v in x], "o": [int(v) for v in o]}

@cuda.jit
def i32_mul(x, o):
    i = cuda.grid(1)
    if i < o.size:
        o[i] = x[i] * x[i] * x[i]          # int32 * int32 -> int64 in numba
x = np.array([2**20 + i for i in range(64)], np.int32)
o = np.zeros(64, np.int64)
i32_mul[1, 64](x, o)
R["i32_cube_to_int64"] = [int(v) for v in o]
o32 = np.zeros(64, np.int32)
i32_mul[1, 64](x, o32)
R["i32_cube_to_int32"] = [int(v) for v in o32]

# ---- float64 math bits ----------------------------------------------------------------------------
rng = np.random.default_rng(1)
x = np.concatenate([rng.uniform(-5, 5, 1024), rng.standard_normal(1024) * 20]).astype(np.float64)
y = rng.uniform(-3, 3, 2048).astype(np.float64)
funcs1 = ["tanh", "exp", "log", "sin", "cos", "tan", "sqrt", "erf", "erfc", "atan", "sinh", "cosh",
          "expm1", "log1p", "log2", "log10", "asinh", "cbrt_"]
funcs2 = ["hypot", "atan2", "pow", "fmod", "copysign"]
def ulps(a, b):
    a = np.asarray(a, np.float64); b = np.asarray(b, np.float64)
    ia = a.view(np.int64); ib = b.view(np.int64)
    ia = np.where(ia < 0, np.int64(-2**63) - ia, ia); ib = np.where(ib < 0, np.int64(-2**63) - ib, ib)
    d = np.abs(ia - ib)
    both_nan = np.isnan(a) & np.isnan(b)
    return np.where(both_nan, 0, d)

mathres = {}
for f in funcs1 + funcs2:
    if f == "cbrt_":
        continue
    two = f in funcs2
    src = f"""
def k(x, y, o):
    i = cuda.grid(1)
    if i < o.size:
        o[i] = math.{f}({'x[i], y[i]' if two else 'x[i]'})
"""
    ns = {"cuda": cuda, "math": math}
    exec(src, ns)
    try:
        kern = cuda.jit(ns["k"])
    except Exception as e:
        mathres[f] = repr(e)[:200]; continue
    xx = x.copy()
    if f in ("log", "sqrt", "log2", "log10", "log1p"):
        xx = np.abs(xx) + (1.0 if f == "log1p" else 0.0)
    o = np.zeros_like(xx)
    try:
        kern[(len(xx) + 255) // 256, 256](xx, y, o)
    except Exception as e:
        mathres[f] = repr(e)[:200]; continue
    npf = {"pow": np.power, "atan2": np.arctan2, "atan": np.arctan, "asinh": np.arcsinh}.get(f, getattr(np, f, None))
    with np.errstate(all="ignore"):
        n = npf(xx, y) if two else npf(xx) if npf is not None else None
    mf = getattr(math, f)
    m = np.array([mf(a, b) if two else mf(a) for a, b in zip(xx, y)]) if f not in ("pow",) else np.array([float(a) ** float(b) if a > 0 else math.nan for a, b in zip(xx, y)])
    entry = {}
    if n is not None:
        u = ulps(o, n)
        entry["gpu_vs_numpy"] = {"neq": int((u > 0).sum()), "max_ulp": int(u.max())}
    u = ulps(o, m)
    entry["gpu_vs_math"] = {"neq": int((u > 0).sum()), "max_ulp": int(u.max())}
    if n is not None:
        u = ulps(n, m)
        entry["numpy_vs_math"] = {"neq": int((u > 0).sum()), "max_ulp": int(u.max())}
    mathres[f] = entry
R["float64_math"] = mathres

# ---- FMA contraction ------------------------------------------------------------------------------
def exact_fma(a, b, c, dt):
    r = Fraction(float(a)) * Fraction(float(b)) + Fraction(float(c))
    return dt(float(r)) if dt is np.float64 else np.float32(_round_f32(r))

def _round_f32(r):
    # correctly round a Fraction to float32: go through float64 with round-to-odd
    f = float(r)                      # nearest float64
    if Fraction(f) != r:
        # round to odd on float64
        m = np.float64(f).view(np.int64)
        if m & 1 == 0:
            f2 = np.nextafter(f, math.inf if Fraction(f) < r else -math.inf)
            f = float(f2)
    return np.float32(f)

def fused(a, b, c, dt):
    return np.array([exact_fma(x, y, z, dt) for x, y, z in zip(a, b, c)], dtype=dt)

n = 4096
fmares = {}
for dtname, dt in (("float32", np.float32), ("float64", np.float64)):
    a = rng.standard_normal(n).astype(dt); b = rng.standard_normal(n).astype(dt)
    c = rng.standard_normal(n).astype(dt); d = rng.standard_normal(n).astype(dt)
    e = rng.standard_normal(n).astype(dt)
    cases = {
        "a*b+c": "o[i] = a[i] * b[i] + c[i]",
        "c+a*b": "o[i] = c[i] + a[i] * b[i]",
        "a*b-c": "o[i] = a[i] * b[i] - c[i]",
        "c-a*b": "o[i] = c[i] - a[i] * b[i]",
        "a*b+c*d": "o[i] = a[i] * b[i] + c[i] * d[i]",
        "a*b-c*d": "o[i] = a[i] * b[i] - c[i] * d[i]",
        "t=a*b;t+c": "t = a[i] * b[i]\n        o[i] = t + c[i]",
        "t=a*b;t+c;reuse": "t = a[i] * b[i]\n        o[i] = t + c[i]\n        o2[i] = t",
        "a*b+c+d": "o[i] = a[i] * b[i] + c[i] + d[i]",
        "c+d+a*b": "o[i] = c[i] + d[i] + a[i] * b[i]",
        "a*b+c*d+e": "o[i] = a[i] * b[i] + c[i] * d[i] + e[i]",
        "(a+b)*c+d": "o[i] = (a[i] + b[i]) * c[i] + d[i]",
        "cuda.fma": "o[i] = cuda.fma(a[i], b[i], c[i])",
        "acc+=a*b (loop 3)": "acc = a[i] - a[i]\n        for k in range(3):\n            acc += a[(i + k) % n] * b[(i + 2 * k) % n]\n        o[i] = acc",
        "acc=acc+a*b (loop 3)": "acc = a[i] - a[i]\n        for k in range(3):\n            acc = acc + a[(i + k) % n] * b[(i + 2 * k) % n]\n        o[i] = acc",
        "-(a*b)+c": "o[i] = -(a[i] * b[i]) + c[i]",
        "a*b+c*float64(2)": "o[i] = a[i] * b[i] + c[i] * 2.0",
        "o[i]+=a*b": "o[i] = c[i]\n        o[i] += a[i] * b[i]",
    }
    res = {}
    for name, body in cases.items():
        src = f"""
def k(a, b, c, d, e, o, o2):
    i = cuda.grid(1)
    n = a.size
    if i < n:
        {body}
"""
        ns = {"cuda": cuda}
        exec(src, ns)
        try:
            kern = cuda.jit(ns["k"])
            o = np.zeros(n, dt); o2 = np.zeros(n, dt)
            kern[(n + 255) // 256, 256](a, b, c, d, e, o, o2)
            ptx = list(kern.inspect_asm().values())[0]
            res[name] = {"gpu": o.view(np.uint64 if dt is np.float64 else np.uint32).tolist()[:0],
                         "fma_in_ptx": ptx.count("fma.rn"), "mul_in_ptx": ptx.count("mul.rn") + ptx.count("mul.f"),
                         "add_in_ptx": ptx.count("add.rn") + ptx.count("add.f") + ptx.count("sub.f")}
            res[name]["out"] = o
        except Exception as ex:
            res[name] = {"error": repr(ex)}
    # classify a few against fused/unfused references
    with np.errstate(all="ignore"):
        ref = {
            "a*b+c": {"unfused": (a * b) + c, "fused": fused(a, b, c, dt)},
            "c+a*b": {"unfused": c + (a * b), "fused": fused(a, b, c, dt)},
            "a*b-c": {"unfused": (a * b) - c, "fused": fused(a, b, -c, dt)},
            "c-a*b": {"unfused": c - (a * b), "fused": fused(-a, b, c, dt)},
            "a*b+c*d": {"unfused": (a * b) + (c * d), "fused(a,b,c*d)": fused(a, b, c * d, dt),
                        "fused(c,d,a*b)": fused(c, d, a * b, dt)},
            "a*b-c*d": {"unfused": (a * b) - (c * d), "fused(a,b,-(c*d))": fused(a, b, -(c * d), dt),
                        "fused(-c,d,a*b)": fused(-c, d, a * b, dt)},
            "t=a*b;t+c": {"unfused": (a * b) + c, "fused": fused(a, b, c, dt)},
            "t=a*b;t+c;reuse": {"unfused": (a * b) + c, "fused": fused(a, b, c, dt)},
            "a*b+c+d": {"unfused": ((a * b) + c) + d, "fused_then_add": fused(a, b, c, dt) + d},
            "c+d+a*b": {"unfused": (c + d) + (a * b), "fused": fused(a, b, c + d, dt)},
            "a*b+c*d+e": {"unfused": ((a * b) + (c * d)) + e, "fma(a,b,c*d)+e": fused(a, b, c * d, dt) + e,
                          "fma(c,d,a*b)+e": fused(c, d, a * b, dt) + e},
            "(a+b)*c+d": {"unfused": ((a + b) * c) + d, "fused": fused(a + b, c, d, dt)},
            "cuda.fma": {"unfused": (a * b) + c, "fused": fused(a, b, c, dt)},
            "-(a*b)+c": {"unfused": -(a * b) + c, "fused": fused(-a, b, c, dt)},
            "o[i]+=a*b": {"unfused": c + (a * b), "fused": fused(a, b, c, dt)},
        }
        # loops: reference computed sequentially
        idx = np.arange(n)
        acc_u = a * dt(0); acc_f = a * dt(0)
        for k in range(3):
            x = a[(idx + k) % n]; yy = b[(idx + 2 * k) % n]
            acc_u = acc_u + x * yy
            acc_f = fused(x, yy, acc_f, dt)
        ref["acc+=a*b (loop 3)"] = {"unfused": acc_u, "fused": acc_f}
        ref["acc=acc+a*b (loop 3)"] = {"unfused": acc_u, "fused": acc_f}
    for name, r in res.items():
        if "out" not in r:
            continue
        o = r.pop("out")
        if name in ref:
            r["equal_to"] = {k: int(np.sum(v.astype(dt).view(np.uint64 if dt is np.float64 else np.uint32) ==
                                           o.view(np.uint64 if dt is np.float64 else np.uint32)))
                             for k, v in ref[name].items()}
        r.pop("gpu", None)
    fmares[dtname] = res
R["fma"] = fmares
R["n_fma"] = n
import numba, numba_cuda
R["versions"] = {"numba": numba.__version__, "numpy": np.__version__}
json.dump(R, open(os.path.join(out_dir, "numerics_probe.json"), "w"), indent=1)
print(json.dumps(R, indent=1)[:11000])
