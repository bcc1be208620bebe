"""DragonFly (Kim, Dally, Scott and Abts, ISCA 2008): groups of routers joined all-to-all.

``dragonfly:A,H[,G[,P]]`` has ``G`` groups of ``A`` routers. Inside a group every router is
linked to every other (a complete graph ``K_A``); every router has ``H`` global ports, and
every pair of groups is joined by exactly one global cable, so ``G <= A*H + 1`` (the maximum,
and the default, uses every global port). The *balanced* dragonfly of the paper has
``A = 2P = 2H`` and ``G = A*H + 1``.

Global cables follow the **palmtree** arrangement (Camarero, Vallejo and Beivide, ACM TACO
2014): the global ports of a group are numbered ``k = 0 .. A*H-1`` (port ``k`` on router
``k // H``), and port ``k`` of group ``i`` goes to group ``(i + k + 1) mod G``, arriving on its
port ``G - 2 - k``; ports ``k >= G - 1`` stay unused when ``G < A*H + 1``. The
``consecutive`` arrangement (option ``:consecutive``) instead joins groups ``i < j`` by port
``j - 1`` of group ``i`` and port ``i`` of group ``j``.

With ``P > 0`` endpoints per router the routers become switches (forwarding-only nodes, see
:mod:`~topocoll.topology.families.switched`): endpoints ``0 .. G*A*P - 1`` are the ranks,
endpoint ``e`` hangs on router ``e // P``, and router ``r`` (group ``r // A``) is node
``G*A*P + r``. With ``P = 0`` (the default) the routers themselves are the nodes.

>>> t = dragonfly_graph(4, 2)               # a = 2h: the balanced router graph, 9 groups
>>> t.num_nodes, set(t.out_degree().tolist()), t.meta["groups"]
(36, {5}, 9)
"""

import numpy as np

from ...defaults import LINK_BANDWIDTH, LINK_LATENCY
from ...errors import SpecError
from .checks import as_int, at_least, check_size, make_topology

__all__ = ["dragonfly_graph", "ARRANGEMENTS"]

#: The global-link arrangements :func:`dragonfly_graph` builds.
ARRANGEMENTS = ("palmtree", "consecutive")


def _global_cables(a, h, g, arrangement):
    """``(router, router)`` of every global cable, each once."""
    i, j = np.triu_indices(g, 1)                      # the group pairs i < j
    if arrangement == "palmtree":
        k_i = (j - i - 1)                             # port of group i towards j
        k_j = (g - 2 - k_i)                           # port of group j towards i
    else:
        k_i, k_j = j - 1, i
    return i * a + k_i // h, j * a + k_j // h


def dragonfly_graph(a, h, g=None, p=0, *, arrangement="palmtree", bandwidth=LINK_BANDWIDTH,
                    latency=LINK_LATENCY):
    """DragonFly: ``g`` groups of ``a`` all-to-all routers, one global cable per group pair.

    Parameters
    ----------
    a : int
        Routers per group, ``>= 1``.
    h : int
        Global ports per router, ``>= 1``.
    g : int, optional
        Groups, ``2 <= g <= a*h + 1``; default ``a*h + 1`` (every global port used).
    p : int
        Endpoints per router (``0``: the routers are the nodes; else they are switches).
    arrangement : {"palmtree", "consecutive"}
        Which global port of each group goes to which group (module text).
    bandwidth, latency : float or str
        Per-link bandwidth (bytes/s) and latency (s).

    Returns
    -------
    Topology
        Named ``"dragonfly:4,2"`` (``",G"`` when not ``a*h + 1``, ``",P"`` when positive,
        ``":consecutive"`` for that arrangement); ``meta`` has ``a``, ``h``, ``groups``,
        ``endpoints``, ``routers`` and ``arrangement``.

    Raises
    ------
    SpecError
        ``a < 1``, ``h < 1``, ``g`` outside ``2 .. a*h + 1``, ``p < 0``, or an unknown
        arrangement.

    Examples
    --------
    >>> t = dragonfly_graph(2, 1, p=1)          # the balanced a = 2p = 2h: 3 groups of 2
    >>> t.num_nodes, len(t.switches), t.num_links
    (12, 6, 24)
    >>> dragonfly_graph(2, 1, 4)
    Traceback (most recent call last):
    ...
    topocoll.errors.SpecError: dragonfly needs 2 <= g <= a*h + 1 groups (one global cable per group pair), got g = 4 for a = 2, h = 1
    """
    a = at_least(as_int(a, "dragonfly routers per group a"), 1,
                 "dragonfly needs a >= 1 routers per group")
    h = at_least(as_int(h, "dragonfly global ports h"), 1,
                 "dragonfly needs h >= 1 global ports per router")
    g = a * h + 1 if g is None else as_int(g, "dragonfly groups g")
    if not 2 <= g <= a * h + 1:
        raise SpecError(f"dragonfly needs 2 <= g <= a*h + 1 groups (one global cable per group "
                        f"pair), got g = {g} for a = {a}, h = {h}")
    p = at_least(as_int(p, "dragonfly endpoints p"), 0, "dragonfly needs p >= 0 endpoints")
    if arrangement not in ARRANGEMENTS:
        raise SpecError(f"dragonfly arrangement must be one of {', '.join(ARRANGEMENTS)}, got "
                        f"{arrangement!r}")
    name = (f"dragonfly:{a},{h}" + (f",{g}" if g != a * h + 1 or p else "")
            + (f",{p}" if p else "") + (":consecutive" if arrangement == "consecutive" else ""))
    routers, ends = g * a, g * a * p
    cables = g * a * (a - 1) // 2 + g * (g - 1) // 2 + ends
    check_size(name, routers + ends, 2 * cables)
    grp, u, v = np.meshgrid(np.arange(g), np.arange(a), np.arange(a), indexing="ij")
    local = u < v
    lu, lv = (grp * a + u)[local], (grp * a + v)[local]
    gu, gv = _global_cables(a, h, g, arrangement)
    ru, rv = np.concatenate([lu, gu]) + ends, np.concatenate([lv, gv]) + ends
    e = np.arange(ends, dtype=np.int64)
    cu, cv = np.concatenate([e, ru]), np.concatenate([ends + e // max(p, 1), rv])
    src, dst = np.concatenate([cu, cv]), np.concatenate([cv, cu])
    order = np.lexsort((dst, src))
    meta = {"family": "dragonfly", "a": a, "h": h, "groups": g, "endpoints": p,
            "routers": routers, "arrangement": arrangement}
    return make_topology(name, routers + ends, src[order], dst[order], bandwidth, latency, meta,
                         switches=range(ends, ends + routers) if p else ())
