"""The effective mixing matrix of hierarchical neighbor averaging over machines.

Bluefog's ``hierarchical_neighbor_allreduce`` (topocoll's
:func:`topocoll.runtime.hierarchical_neighbor_allreduce`) averages inside each machine of ``L``
ranks, then mixes the machines' averages with an ``M x M`` machine matrix ``W_k``, and every
rank ends with its machine's result. With machine-major ranks (rank ``r`` is local rank ``r %
L`` of machine ``r // L``) one such step on ``n = M L`` ranks is the mixing matrix::

    W_eff,k = W_k kron (1/L) 1 1^T

so a hierarchical topology is a :class:`~topocoll.gossip.GossipTopology` like any other, and
``rho``, the period and the exact-average facts of :func:`~topocoll.gossip.analyze` apply to it.
Since ``W_eff - 11^T/n = (W - 11^T/M) kron (1/L) 1 1^T`` and ``(1/L) 1 1^T`` has norm 1, the
hierarchical step has the machine topology's ``rho`` (per iteration and over a period) and
reaches the exact mean after the same number of iterations: the ranks inside a machine cost
nothing to mix.

>>> import numpy as np
>>> hierarchical_matrix([[0.5, 0.5], [0.5, 0.5]], 2).tolist()[0]
[0.25, 0.25, 0.25, 0.25]
>>> t = hierarchical_topology("one-peer-exp", 16, 4)
>>> t.size, t.period, t.params["machines"]
(16, 2, 4)
"""

import numpy as np
import scipy.sparse as sp

from ..errors import SpecError, TopologyError
from ..units import whole_number
from .mixing import GossipTopology, GraphTopology, require_sparse
from .registry import gossip_topology

__all__ = ["hierarchical_matrix", "HierarchicalTopology", "hierarchical_topology",
           "require_hierarchical"]


def hierarchical_matrix(machine_matrix, local_size):
    """``W kron (1/L) 1 1^T``: one hierarchical step on ``M L`` machine-major ranks.

    Parameters
    ----------
    machine_matrix : array_like or scipy sparse matrix
        The ``(M, M)`` machine matrix ``W`` (row ``m``: the weights machine ``m`` applies).
    local_size : int
        Ranks per machine ``L``.

    Returns
    -------
    numpy.ndarray or scipy.sparse.csr_array
        The ``(M L, M L)`` matrix, sparse where ``machine_matrix`` is.

    Examples
    --------
    >>> hierarchical_matrix(np.eye(2), 2).tolist()
    [[0.5, 0.5, 0.0, 0.0], [0.5, 0.5, 0.0, 0.0], [0.0, 0.0, 0.5, 0.5], [0.0, 0.0, 0.5, 0.5]]
    """
    local_size = whole_number(local_size, "local_size")
    block = np.full((local_size, local_size), 1.0 / local_size)
    if sp.issparse(machine_matrix):
        return sp.csr_array(sp.kron(machine_matrix, block, format="csr"))
    w = np.asarray(machine_matrix, dtype=np.float64)
    if w.ndim != 2 or w.shape[0] != w.shape[1]:
        raise TopologyError(f"a machine matrix must be square (M, M), got shape {w.shape}")
    return np.kron(w, block)


class HierarchicalTopology(GossipTopology):
    """A machine topology seen on its ``M L`` ranks: iteration ``k`` mixes with
    ``W_k kron (1/L) 1 1^T`` (see the module).

    Parameters
    ----------
    machine : GossipTopology or array_like
        The machines' topology (``M`` nodes), or one fixed ``(M, M)`` matrix.
    local_size : int
        Ranks per machine ``L``.
    name : str, optional
        Default ``"hierarchical:" + the machine topology's name``.

    Attributes
    ----------
    machine : GossipTopology
    machines, local_size : int
        ``M`` and ``L``; ``params`` holds the machine topology's parameters and both.

    Examples
    --------
    >>> from topocoll.gossip import analyze, gossip_topology
    >>> t = HierarchicalTopology(gossip_topology("ring", 4), 2)
    >>> round(analyze(t).rho, 6) == round(analyze(t.machine).rho, 6)
    True
    """

    def __init__(self, machine, local_size, name=None):
        if not isinstance(machine, GossipTopology):
            machine = GraphTopology("machines", np.asarray(machine, dtype=np.float64))
        self.machine = machine
        self.machines = machine.size
        self.local_size = whole_number(local_size, "local_size")
        params = {**machine.params, "machines": self.machines,
                  "ranks_per_machine": self.local_size}
        super().__init__(name or f"hierarchical:{machine.name}",
                         self.machines * self.local_size, machine.period, params)

    def _build_sparse(self, k):
        w = self.machine.sparse_matrix(k)
        require_sparse(self.name, self.size, w.nnz * self.local_size ** 2)
        return hierarchical_matrix(w, self.local_size)


def require_hierarchical(name, nodes, local_size):
    """Refuse, before the machine topology is built, a hierarchical step on ``nodes`` ranks
    whose effective matrix cannot fit: it holds at least ``L^2`` weights per machine (a
    machine matrix with a weight in every row), ``nodes * L`` in all.

    >>> require_hierarchical("ring", 64, 4)
    """
    require_sparse(f"hierarchical:{name}", nodes, nodes * local_size)


def hierarchical_topology(name, nodes, local_size, **params):
    """The hierarchical step of the registered machine topology ``name`` on ``nodes`` ranks,
    ``local_size`` per machine: ``name`` is built for ``nodes / local_size`` machines.

    Raises
    ------
    SpecError
        ``local_size`` does not divide ``nodes``, or no topology ``name`` exists for that many
        machines (the message names the rule).

    Examples
    --------
    >>> hierarchical_topology("ring", 8, 3)
    Traceback (most recent call last):
    ...
    topocoll.errors.SpecError: hierarchical local size 3 must divide n = 8 (machines of 3 ranks)
    """
    nodes = whole_number(nodes, "the world size")
    local_size = whole_number(local_size, "the hierarchical local size")
    if nodes % local_size:
        raise SpecError(f"hierarchical local size {local_size} must divide n = {nodes} "
                        f"(machines of {local_size} ranks)")
    require_hierarchical(name, nodes, local_size)
    return HierarchicalTopology(gossip_topology(name, nodes // local_size, **params), local_size)
