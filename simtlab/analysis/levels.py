"""Reduction trees level by level: divergence, issue slots and bank conflicts per barrier epoch.

A tree reduction runs one level per barrier epoch (the stretch of code between two
``syncthreads``). The emulator records the epoch of every access (``run.memory.epoch``) and of
every executed line (``run.lines.epoch``); ``levels(run)`` measures each epoch of one block.
"""

from __future__ import annotations

from .bank_conflicts import requests as shared_requests
from .divergence import instructions
from ..simt import WARP_SIZE

__all__ = ["levels", "tree_levels"]


def levels(run, array: str = "s", block: int = 0) -> list[dict]:
    """One dict per barrier epoch of ``block``: how the warps spent that epoch.

    Keys: ``epoch``; ``instructions`` (warp instructions issued) and ``simt_efficiency`` (lane
    slots used over all of them); ``writes`` (elements of ``array`` written), ``write_instructions``
    (warp instructions that wrote ``array``: the issue slots of the tree's add) and
    ``add_efficiency`` (lanes per such instruction / 32); ``shared_requests``, ``wavefronts``
    and ``bank_conflicts`` (wavefronts beyond the conflict-free number) of shared memory.
    """
    lines = run.lines
    lines = lines[lines.block == block]
    ep = lines.epoch
    mem = run.memory
    mem = mem[mem.block == block]
    aid = run.array(array).id
    out = []
    for e in range(int(ep.max()) + 1 if len(ep) else 0):
        ins = instructions(lines[ep == e])
        m = mem[mem.epoch == e]
        writes = m[(m.array == aid) & (m.kind != 0)]
        wins = {(int(g), int(s), int(q)) for g, s, q in zip(writes.gwarp, writes.site, writes.seq)}
        req = shared_requests(m)
        n_ins = len(ins)
        out.append({
            "epoch": e,
            "instructions": n_ins,
            "simt_efficiency": float(ins.lanes.sum() / (WARP_SIZE * n_ins)) if n_ins else None,
            "writes": int(len(writes)),
            "write_instructions": len(wins),
            "add_efficiency": float(len(writes) / (WARP_SIZE * len(wins))) if wins else None,
            "shared_requests": int(len(req)),
            "wavefronts": int(req.wavefronts.sum()) if len(req) else 0,
            "bank_conflicts": int((req.wavefronts - req.ideal).sum()) if len(req) else 0,
        })
    return out


def tree_levels(run, array: str = "s", block: int = 0) -> list[dict]:
    """``levels`` without the epochs that write nothing to ``array`` and without the first one
    that does (the load): the levels of the tree itself."""
    rows = [r for r in levels(run, array, block) if r["writes"]]
    return rows[1:]
