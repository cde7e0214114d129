"""Classic fair share (paper 004 eq. 2.5; SchedMD classic_fair_share.html).

f = 2^(-U / S) with U the user's (decayed) usage over the total usage and S its normalized
shares. For users directly under root this is eq. 2.5 of 004 exactly (S = RawShares / sum of
RawShares); under accounts S is Slurm's normalized share, the product down the tree of
shares / (shares of self and siblings) (classic_fair_share.html, "Normalized Shares").
No usage at all gives U = 0, so f = 1; S = 0 gives f = 0.
"""

from __future__ import annotations

from djsb.model.priority.accounts import AccountTree, Association


def normalized_shares(node: Association) -> float:
    """Product of shares / sibling shares from ``node`` up to root."""
    share = 1.0
    while node.parent is not None:
        share *= node.share_fraction
        node = node.parent
    return share


def classic_factors(tree: AccountTree) -> dict[tuple[str, str], float]:
    """Fair share factor of every user association (call ``tree.settle`` first)."""
    total = tree.root.total
    factors = {}
    for key, assoc in tree.users.items():
        share = normalized_shares(assoc)
        usage = assoc.total / total if total > 0 else 0.0
        factors[key] = 2.0 ** (-usage / share) if share > 0 else 0.0
    return factors
