"""What a tag may be: the rule the CLI's ``--tag`` and ``results import`` share.

A tag is 1 to :data:`MAX_TAG` characters (the ``result_tags.tag`` column) without a comma or a
control character: the store's ``tags`` column keeps a result's tags joined by commas, which
``results list`` splits again, so ``--tag a,b`` would come back as two tags.
"""

from __future__ import annotations

MAX_TAG = 128


def tag_problem(tag: str) -> str | None:
    """Why ``tag`` cannot be a tag, saying what a tag is (None: it can)."""
    bad = "," in tag or any(ord(c) < 32 or ord(c) == 127 for c in tag)
    if tag.strip() and len(tag) <= MAX_TAG and not bad:
        return None
    got = f"{tag[:40]!r}" + (f" ({len(tag)} characters)" if len(tag) > 40 else "")
    return f"a tag is 1 to {MAX_TAG} characters without a comma or control character, got {got}"
