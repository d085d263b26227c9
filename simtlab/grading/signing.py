"""Results lines signed with a key the notebook's kernel never sees.

Kept apart from the pytest plugin (``nbplugin``) so that the grader, and ``simtlab`` itself,
import without pytest: pytest is needed only by ``simtlab grade`` (the ``grade`` extra).
"""

from __future__ import annotations

import hashlib
import hmac
import json

__all__ = ["sign_ok"]


def sign_ok(key: bytes, line: str) -> dict | None:
    """The record of one results line, or None when the line is not signed with ``key``."""
    try:
        outer = json.loads(line)
        body, mac = outer["body"], outer["mac"]
        want = hmac.new(key, body.encode(), hashlib.sha256).hexdigest()
        if not isinstance(mac, str) or not hmac.compare_digest(mac, want):
            return None
        record = json.loads(body)
        return record if isinstance(record, dict) else None
    except (ValueError, KeyError, TypeError):
        return None
