"""Time-expanded-network (TEN) synthesis, after TACOS: any collective on any topology.

* :mod:`.synthesis` -- :func:`synthesize`, the entry point: the form, the phases of combining
  collectives, the search or the ILP;
* :mod:`.options` -- :data:`TEN_OPTIONS`, the one table of its options (parser, default, doc)
  that ``synthesize``, ``generate(..., "ten")`` and ``topocoll synth`` read;
* :mod:`.problem` -- the TEN model (chunks, pre/postconditions, discretized links, what a
  synthesis may cost) and events turned into schedules;
* :mod:`.bounds` -- the chunk lower bound;
* :mod:`.search` -- the greedy's restarts, discretizations and repair, and the exact ILP;
* :mod:`.greedy` -- greedy link-chunk matching, vectorized over the links (its state in
  :mod:`.greedy_flood`, :mod:`.greedy_routed`, :mod:`.greedy_sends` and :mod:`.bitsets`);
* :mod:`.latebind` -- the greedy on links of mixed speeds (late binding, arrival estimates);
* :mod:`.repair` -- small ILPs that re-solve the greedy's last slots on mixed speeds;
* :mod:`.cayley` -- all-gathers on tori (translation symmetry) as one node's schedule,
  translated;
* :mod:`.cutbound`, :mod:`.releasebound` -- the pair-cut, pair-forwarding and release-time
  terms of the chunk lower bound;
* :mod:`.ilp` -- the ILP on HiGHS (horizon search, early termination, time clustering), the
  entry to its parts: :mod:`.ilp_inputs` (checks), :mod:`.ilp_bounds` (earliest arrivals, the
  lower bound), :mod:`.listsched` (list scheduling: the upper bound and the completion of
  partial schedules), :mod:`.ilp_model` (one model, solved on HiGHS) and :mod:`.ilp_search`
  (the horizon search and time clustering);
* :mod:`.tenants` -- several collectives sharing one network; :mod:`.tenants_ilp` -- the same
  by one ILP over all of them.
"""

from ...lazy import lazy_attributes

# Public names -> the submodule that defines them. A submodule is imported when one of its
# names is first used (PEP 562), so a job loads only the modules it needs (start-up time).
_LAZY = {
    ".bounds": ("chunk_lower_bound",),
    ".options": ("TEN_OPTIONS",),
    ".problem": ("METHODS", "TEN_COLLECTIVES", "TenProblem", "chunk_conditions", "discretize",
                 "events_to_compact", "events_to_schedule", "ten_problem"),
    ".synthesis": ("synthesize",),
    ".tenants": ("TenantsResult", "parse_tenant", "synthesize_tenants"),
    ".tenants_ilp": ("ilp_tenants",),
}

__all__ = ["synthesize", "TenProblem", "ten_problem", "chunk_conditions", "discretize",
           "chunk_lower_bound", "events_to_schedule", "events_to_compact", "METHODS",
           "TEN_COLLECTIVES", "synthesize_tenants", "TenantsResult", "parse_tenant",
           "TEN_OPTIONS", "ilp_tenants"]


__getattr__, __dir__ = lazy_attributes(__name__, _LAZY, __all__)
