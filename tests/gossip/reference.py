"""Independent re-implementations of decent_dp's and Bluefog's topology code, as oracles.

They follow the upstream code line by line (decent_dp ``topo.py``; Bluefog
``bluefog/common/topology_util.py``), with networkx graphs in Bluefog's convention (an edge
``src -> dst`` with the weight ``dst`` gives ``src``), not topocoll's code paths.
"""

import math

import networkx as nx
import numpy as np


# ----------------------------------------------------------------------------- decent_dp

def dd_one_peer_exp(world_size):
    rounds = round(math.log2(world_size))
    assert world_size == 2 ** rounds
    edges = []
    for i in range(rounds):
        edges.append([])
        used = [False] * world_size
        for j in range(world_size):
            if not used[j]:
                used[j] = True
                used[(j + 2 ** i) % world_size] = True
                edges[i].append((tuple(sorted([j, (j + 2 ** i) % world_size])), 0.5))
    return edges


def dd_ring(world_size):
    assert world_size % 2 == 0
    edges = [[], []]
    for i in range(0, world_size, 2):
        edges[0].append((tuple(sorted([i, (i + 1) % world_size])), 0.5))
    for i in range(0, world_size, 2):
        edges[1].append((tuple(sorted([i, (i - 1 + world_size) % world_size])), 0.5))
    return edges


def dd_alternating_exp_ring(world_size, local):
    n_nodes = world_size // local
    rounds = round(math.log2(n_nodes))
    assert n_nodes == 2 ** rounds and rounds >= 1

    def node(j):
        return list(range(j * local, (j + 1) * local))
    edges = []
    cnt = 0
    for i in range(rounds):
        edges.append([])
        edges.append([])
        used = [False] * n_nodes
        for j in range(n_nodes):
            if not used[j]:
                used[j] = True
                t = (j + 2 ** i) % n_nodes
                used[t] = True
                inter = (tuple(node(j) + node(t)), 1. / local / 2.)
                intra = [(tuple(node(j)), 1. / local), (tuple(node(t)), 1. / local)]
                if cnt % 2 == 0:
                    edges[-1].append(inter)
                    edges[-2].extend(intra)
                else:
                    edges[-1].extend(intra)
                    edges[-2].append(inter)
                cnt += 1
    return edges


def normalized(iteration):
    """Groups as a sorted list of (sorted ranks, weight), singletons with weight 1."""
    return sorted((tuple(sorted(r)), 1.0 if len(r) == 1 else float(w)) for r, w in iteration)


# ----------------------------------------------------------------------------- Bluefog

def _is_power_of(x, base):
    return base ** int(math.log(x, base)) == x


def _roll_graph(x):
    size = len(x)
    topo = np.empty((size, size))
    for i in range(size):
        topo[i] = np.roll(x, i)
    return nx.from_numpy_array(topo, create_using=nx.DiGraph)


def bf_exponential_graph(size, base=2):
    x = [1.0] + [1.0 if _is_power_of(i, base) else 0.0 for i in range(1, size)]
    x = np.array(x)
    return _roll_graph(x / x.sum())


def bf_symmetric_exponential_graph(size, base=4):
    x = [1.0]
    for i in range(1, size):
        index = i if i <= size // 2 else size - i
        x.append(1.0 if _is_power_of(index, base) else 0.0)
    x = np.array(x)
    return _roll_graph(x / x.sum())


def bf_ring_graph(size, connect_style=0):
    if size == 2:
        return nx.from_numpy_array(np.array([[0.5, 0.5], [0.5, 0.5]]), create_using=nx.DiGraph)
    x = np.zeros(size)
    x[0] = 0.5
    if connect_style == 0:
        x[0] = x[-1] = x[1] = 1 / 3.0
    elif connect_style == 1:
        x[-1] = 0.5
    else:
        x[1] = 0.5
    return _roll_graph(x)


def bf_mesh_grid_2d(size, shape=None):
    if shape is None:
        i = int(np.sqrt(size))
        while size % i != 0:
            i -= 1
        shape = (i, size // i)
    nrow, ncol = shape
    topo = np.zeros((size, size))
    for i in range(size):
        topo[i][i] = 1.0
        if (i + 1) % ncol != 0:
            topo[i][i + 1] = 1.0
            topo[i + 1][i] = 1.0
        if i + ncol < size:
            topo[i][i + ncol] = 1.0
            topo[i + ncol][i] = 1.0
    nbrs = [np.nonzero(topo[i])[0] for i in range(size)]
    for i in range(size):
        for j in nbrs[i]:
            if i != j:
                topo[i][j] = 1.0 / max(len(nbrs[i]), len(nbrs[j]))
        topo[i][i] = 2.0 - topo[i].sum()
    return nx.from_numpy_array(topo, create_using=nx.DiGraph)


def bf_star_graph(size, center_rank=0):
    topo = np.zeros((size, size))
    for i in range(size):
        topo[i, i] = 1 - 1 / size
        topo[center_rank, i] = 1 / size
        topo[i, center_rank] = 1 / size
    return nx.from_numpy_array(topo, create_using=nx.DiGraph)


def bf_fully_connected(size):
    return _roll_graph(np.array([1 / size] * size))


def bf_dynamic_one_peer(topo, self_rank):
    size = topo.number_of_nodes()
    sorted_send_ranks = []
    for rank in range(size):
        sorted_ranks = sorted(topo.successors(rank),
                              key=lambda r, rk=rank: r - rk if r >= rk else r - rk + size)
        if sorted_ranks[0] == rank:
            sorted_ranks = sorted_ranks[1:]
        sorted_send_ranks.append(sorted_ranks)
    self_degree = topo.out_degree(self_rank) - 1
    index = 0
    while True:
        send_rank = sorted_send_ranks[self_rank][index % self_degree]
        recv_ranks = []
        for other_rank in range(size):
            if other_rank == self_rank:
                continue
            degree = topo.out_degree(other_rank) - 1
            if sorted_send_ranks[other_rank][index % degree] == self_rank:
                recv_ranks.append(other_rank)
        yield [send_rank], recv_ranks
        index += 1


def bf_inner_outer_ring(world_size, local_size, self_rank):
    num_machines = world_size // local_size
    nodes_per_machine = local_size
    assert local_size > 2
    index = 0
    while True:
        machine_id = self_rank // nodes_per_machine
        local_rank_id = self_rank % nodes_per_machine
        out_id = index % nodes_per_machine
        if out_id == local_rank_id:
            send_rank = ((machine_id + 1) % num_machines) * nodes_per_machine + local_rank_id
            recv_rank = ((machine_id - 1) % num_machines) * nodes_per_machine + local_rank_id
        else:
            target = (local_rank_id + 1) % nodes_per_machine
            if target == out_id:
                target = (target + 1) % nodes_per_machine
            send_rank = target + machine_id * nodes_per_machine
            source = (local_rank_id - 1) % nodes_per_machine
            if source == out_id:
                source = (source - 1) % nodes_per_machine
            recv_rank = source + machine_id * nodes_per_machine
        yield [send_rank], [recv_rank]
        index += 1


def bf_inner_outer_expo2(world_size, local_size, self_rank):
    num_machines = world_size // local_size
    nodes_per_machine = local_size
    assert local_size > 2
    exp_2_out_size = int(np.log2(num_machines - 1))
    exp_2_in_size = int(np.log2(nodes_per_machine - 2))
    index = 0
    while True:
        machine_id = self_rank // nodes_per_machine
        local_rank_id = self_rank % nodes_per_machine
        out_id = index % nodes_per_machine
        if out_id == local_rank_id:
            dist = 2 ** (index % (exp_2_out_size + 1))
            send_rank = ((machine_id + dist) % num_machines) * nodes_per_machine + local_rank_id
            recv_rank = ((machine_id - dist) % num_machines) * nodes_per_machine + local_rank_id
        else:
            dist_to_out = (out_id - local_rank_id) % nodes_per_machine
            inner = 2 ** (index % (exp_2_in_size + 1))
            if inner >= dist_to_out:
                inner += 1
            send_rank = (local_rank_id + inner) % nodes_per_machine + machine_id * nodes_per_machine
            reverse = 2 ** (index % (exp_2_in_size + 1))
            reverse_dist_to_out = (local_rank_id - out_id) % nodes_per_machine
            if reverse >= reverse_dist_to_out:
                reverse += 1
            recv_rank = ((local_rank_id - reverse) % nodes_per_machine
                         + machine_id * nodes_per_machine)
        yield [send_rank], [recv_rank]
        index += 1
