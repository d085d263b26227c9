"""The SIMT model's constants and encodings, in one place for the emulator, analyses and plots.

Nothing here imports the rest of ``simtlab``: the emulator (which writes traces) and the
analyses (which read them) both import this module, and never each other in that direction.
"""

from __future__ import annotations


WARP_SIZE = 32
FULL_MASK = 0xFFFFFFFF


def cdiv(a: int, b: int) -> int:
    """Ceiling division: how many blocks of ``b`` cover ``a`` items."""
    return -(-a // b)


def percent(fraction: float, decimals: int = 0) -> str:
    """``fraction`` as a percentage that never rounds to a whole 100 % or 0 % it is not:
    a SIMT efficiency of 0.997 is "99.7%", not "100%" (which would say no lane ever idles).
    Decimals are added, up to 3, until the text differs from the boundary; past that
    ">99.999%" (or "<0.001%")."""
    if fraction == 1 or fraction == 0 or not 0 < fraction < 1:
        return f"{fraction:.{decimals}%}"
    for d in range(decimals, 4):
        text = f"{fraction:.{d}%}"
        if float(text[:-1]) not in (0.0, 100.0):
            return text
    return ">99.999%" if fraction > 0.5 else "<0.001%"

# memory spaces (column ``space`` of ``run.memory``)
GLOBAL, SHARED, LOCAL, CONST = 0, 1, 2, 3
SPACES = {GLOBAL: "global", SHARED: "shared", LOCAL: "local", CONST: "const"}
SPACE_CODES = {name: code for code, name in SPACES.items()}

# access kinds (column ``kind`` of ``run.memory``)
READ, WRITE, ATOMIC = 0, 1, 2
KINDS = {READ: "read", WRITE: "write", ATOMIC: "atomic"}

# A source *site* is one line of one function (the kernel or a device function), as one int:
# the function's code index in the launch (the kernel is 0) above the line number.
SITE_SHIFT = 20
LINE_MASK = (1 << SITE_SHIFT) - 1


def make_site(code_index: int, line: int) -> int:
    return code_index << SITE_SHIFT | line


def site_line(site):
    """The source line number of a site (works on ints and NumPy arrays)."""
    return site & LINE_MASK


def site_code(site):
    """The code index of a site: which function of the launch the line belongs to."""
    return site >> SITE_SHIFT
