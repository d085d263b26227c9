"""Installed MB each direct dependency of simtlab brings, for the README's dependency table.

Run it with the Python of a fresh venv (`pip install -e .`, or with an extra). Each package
counts its dependency closure less what a package before it in ORDER already brought.
"""
import importlib.metadata as md, os, re
def size(d):
    t = 0
    for f in d.files or []:
        try: t += os.path.getsize(d.locate_file(f))
        except OSError: pass
    return t
norm = lambda n: re.sub(r"[-_.]+", "-", n).lower()
dists = {norm(d.metadata["Name"]): d for d in md.distributions()}
def deps(name):
    d = dists.get(name)
    out = []
    for r in (d.requires or []) if d else []:
        if ";" in r and "extra" in r.split(";")[1]: continue
        out.append(norm(re.match(r"[A-Za-z0-9_.\-]+", r).group(0)))
    return out
seen = set()
# the README's order; numba-cuda is in the GPU and test extras
order = ["numpy", "numba", "greenlet", "matplotlib", "ipywidgets", "nbformat", "jupyterlab", "numba-cuda"]
for top in order:
    stack, mine = [top], []
    while stack:
        n = stack.pop()
        if n in seen or n not in dists: continue
        seen.add(n); mine.append(n); stack += deps(n)
    tot = sum(size(dists[n]) for n in mine)
    print(f"{top:12s} {tot/1e6:6.1f} MB  {len(mine)} dists: {', '.join(sorted(mine, key=lambda n: -size(dists[n]))[:6])}")
rest = [n for n in dists if n not in seen]
print(f"{'rest':12s} {sum(size(dists[n]) for n in rest)/1e6:6.1f} MB  {rest}")
