"""The course's kernels, one module per topic, importable as ``simtlab.kernels.<topic>``.

Each module follows the same plan: a CPU (NumPy) reference first, then numbered kernel
versions, each with one comment line on what it changes and why it is faster, then the napkin
math (bytes moved, FLOPs) that the benchmarks use.
"""
