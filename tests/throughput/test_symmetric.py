"""The symmetric all-to-all LP (one source's flow under a translation group): closed forms, the
same lambda as the whole link LP, a certificate checked with all-pairs distances, and the flow
mapped to every source and checked as a full multicommodity flow."""

import numpy as np
import pytest

from tests.throughput.test_lp import CLOSED_FORMS, check_link_flows, unit
from topocoll.errors import UnsupportedError
from topocoll.throughput import (certificate, link_throughput, symmetric_certificate,
                                 symmetric_throughput, throughput)
from topocoll.topology import topology
from topocoll.topology.symmetry import translation_group

REL = 1e-6
SYMMETRIC = [(spec, lam) for spec, lam in CLOSED_FORMS
             if translation_group(unit(spec)) is not None]


def all_sources(t, res):
    """Source 0's flow translated to every source: ``flows[s, e]`` for the full LP."""
    group = translation_group(t)
    psrc, pdst, _, _ = t.pairs
    n = t.num_nodes
    index = {(int(u), int(v)): i for i, (u, v) in enumerate(zip(psrc, pdst))}
    full = np.zeros((n, psrc.size))
    for s in range(n):
        back_u = group.subtract(psrc, s)
        back_v = group.subtract(pdst, s)
        full[s] = res.flows[0][[index[(int(u), int(v))] for u, v in zip(back_u, back_v)]]
    return full


def test_most_closed_forms_are_symmetric():
    assert len(SYMMETRIC) >= 12


@pytest.mark.parametrize(("spec", "expected"), SYMMETRIC)
def test_closed_forms(spec, expected):
    t = unit(spec)
    res = symmetric_throughput(t)
    assert res.status == 0 and res.method == "symmetric"
    assert res.lam == pytest.approx(expected, rel=REL)
    assert res.dual_bound == pytest.approx(expected, rel=REL)
    # the certificate again, with every pair's distance instead of node 0's tree
    assert certificate(t, res.lengths) == pytest.approx(res.dual_bound, rel=1e-9)
    assert res.dual_bound >= res.lam * (1 - 1e-9)

    class Full:
        lam = res.lam
        flows = all_sources(t, res)
    check_link_flows(t, Full)


@pytest.mark.parametrize("spec", ["circulant:8:1,3", "circulant:12:1,5", "torus:3x5",
                                  "hamming:2,3", "torus:2x2:double"])
def test_same_lambda_as_the_whole_link_lp(spec):
    t = unit(spec)
    assert translation_group(t) is not None
    assert symmetric_throughput(t).lam == pytest.approx(link_throughput(t).lam, rel=REL)


def test_heterogeneous_but_invariant_links():
    # a 4x6 torus whose first dimension's links are twice as fast: still invariant
    t = topology("torus:4x6")
    group = translation_group(t)
    psrc, pdst = t.src, t.dst
    first_dim = group.subtract(pdst, psrc) % 6 == 0
    t = t.with_links(bandwidth=np.where(first_dim, 2.0, 1.0))
    assert translation_group(t) is not None
    assert symmetric_throughput(t).lam == pytest.approx(link_throughput(t).lam, rel=REL)


def test_large_torus_against_the_closed_form():
    k = 32
    res = symmetric_throughput(unit(f"torus:{k}x{k}"), bounds=False)
    assert res.status == 0
    assert res.lam == pytest.approx(8 / (k * k * k), rel=REL)


def test_symmetric_certificate_equals_the_all_pairs_one_for_invariant_lengths():
    t = unit("torus:4x6")
    group = translation_group(t)
    psrc, pdst, _, _ = t.pairs
    rng = np.random.default_rng(3)
    per_label = rng.uniform(0.5, 2.0, size=24)
    lengths = per_label[group.subtract(pdst, psrc)]
    assert symmetric_certificate(t, lengths) == pytest.approx(certificate(t, lengths), rel=1e-12)


def test_default_method_and_refusals():
    assert throughput(unit("torus:4x4")).method == "symmetric"
    assert throughput(unit("genkautz:12,2")).method == "link"
    assert throughput(unit("torus:4x4"), method="link").method == "link"
    with pytest.raises(UnsupportedError, match="no translation symmetry"):
        symmetric_throughput(unit("genkautz:12,2"))
    with pytest.raises(UnsupportedError, match="no hop bound"):
        throughput(unit("torus:4x4"), method="symmetric", max_hops=1)
