"""How the schedule fixtures in this folder were made (they are committed; re-run from the
repository root with ``python tests/data/make_fixtures.py`` only to change them).

Each file's ``meta`` says what it is: ``note`` (a sentence starting "valid:" or "invalid:"),
``expect`` and, for invalid files, the ``kind`` of the first violation the verifier reports.
"""
import json
import numpy as np
import topocoll as tc
from topocoll.schedule import dumps_schedule, verify

out = "tests/data/"  # run from the repository root

def _pretty(doc):
    """One key per line; every link and transfer on a line of its own."""
    lines = ["{"]
    items = list(doc.items())
    for i, (k, v) in enumerate(items):
        end = "," if i < len(items) - 1 else ""
        if k == "topology":
            links = ",\n".join("      " + json.dumps(l) for l in v["links"])
            head = json.dumps({kk: vv for kk, vv in v.items() if kk != "links"})[:-1]
            lines.append(f'  "topology": {head}, "links": [\n{links}\n  ]}}{end}')
        elif k == "transfers":
            rows = ",\n".join("    " + json.dumps(r) for r in v)
            lines.append(f'  "transfers": [\n{rows}\n  ]{end}')
        else:
            lines.append(f"  {json.dumps(k)}: {json.dumps(v)}{end}")
    return "\n".join(lines) + "\n}\n"

def save(name, s, note, expect, kind=None):
    doc = json.loads(dumps_schedule(s))
    doc["meta"] = {"note": note, "expect": expect, **({"kind": kind} if kind else {})}
    with open(out + name, "w") as fh:
        fh.write(_pretty(doc))
    back = tc.load_schedule(out + name)
    r = verify(back)
    print(name, r.valid, dict(r.counts), r.errors[0].kind if r.errors else None)

def main():
    """Write the fixtures (only when run as a script: pytest imports this file to
    look for doctests, and two test workers rewriting them at once raced)."""
    ag = tc.generate(tc.build_topology("circulant:6:1,2", bandwidth=1.0, latency=1.0), "allgather", "bfb")
    save("valid-allgather-bfb-circulant6.json", ag,
         "valid: BFB allgather on circulant:6:1,2 (degree 4, diameter 2), 2 steps", "valid")
    ar = tc.generate(tc.build_topology("uniring:4", bandwidth=1.0, latency=1.0), "allreduce", "ring")
    save("valid-allreduce-ring-uniring4.json", ar,
         "valid: ring reduce-scatter then allgather on a unidirectional 4-ring, 6 steps", "valid")
    t = ag.transfers

    keep = ~((t["step"] == 1) & (t["src"] == 0) & (t["dst"] == 4) & (t["shard"] == 0))
    save("invalid-causality.json", ag.replace(transfers=t[keep]),
         "invalid: the step-1 copy of shard 0 from node 0 to node 4 is removed, so in step 2 node 4 "
         "forwards a quarter of shard 0 it never received", "invalid", "causality")
    ta = ar.transfers
    extra = ta[(ta["step"] == 1) & (ta["src"] == 1) & (ta["shard"] == 0)].copy()
    extra["step"] = 3
    dup = np.sort(np.concatenate([ta, extra]), order="step", kind="stable")
    save("invalid-double-count.json", ar.replace(transfers=dup),
         "invalid: in step 3 node 1 adds its contribution to shard 0 into node 2 a second time "
         "(it already went there in step 1)", "invalid", "double_count")

    tm = ta[~((ta["step"] == 6) & (ta["src"] == 1))]
    save("invalid-incomplete.json", ar.replace(transfers=tm),
         "invalid: the last step's copy of shard 3 from node 1 to node 2 is removed, so node 2 ends "
         "without the reduced shard 3", "invalid", "incomplete")


if __name__ == "__main__":
    main()
