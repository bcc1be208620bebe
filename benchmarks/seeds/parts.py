"""What the scripts of benchmarks/seeds/ share: the command line that picks parts, and the
table every part prints (``| item | paper | ours | ours/paper | note |``)."""

import argparse
import time

import numpy as np

from hardware import machine

__all__ = ["fmt", "row", "parse_parts", "print_part", "run_parts"]


def fmt(x, nd=4):
    """A table cell: ``n/a`` for None, text as it is, whole numbers whole, others to ``nd``
    significant digits."""
    if x is None:
        return "n/a"
    if isinstance(x, str):
        return x
    if isinstance(x, (int, np.integer)):
        return str(int(x))
    return f"{x:.{nd}g}"


def row(item, paper, ours, note="", nd=4, ratio=None):
    """One table row; the ratio is ours/paper where both are numbers (or given)."""
    if ratio is None and isinstance(paper, (int, float)) and isinstance(ours, (int, float)) \
            and paper:
        ratio = ours / paper
    return (item, fmt(paper, nd), fmt(ours, nd), fmt(ratio, 4), note)


def parse_parts(doc, parts, argv=None, *, configure=None):
    """``(args, names)``: ``--quick`` and ``--only a,b`` (any unknown part refused), plus
    whatever ``configure(parser)`` adds."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="smaller cases (about a minute)")
    ap.add_argument("--only", default="", help="comma-separated parts: " + ", ".join(parts))
    if configure is not None:
        configure(ap)
    args = ap.parse_args(argv)
    names = [p for p in args.only.split(",") if p] or list(parts)
    unknown = [p for p in names if p not in parts]
    if unknown:
        ap.error(f"unknown part(s) {', '.join(unknown)}; choose from {', '.join(parts)}")
    return args, names


def print_part(name, doc, rows, seconds):
    """One part's table, with the seconds it took."""
    print(f"\n## {name}: {' '.join(doc.split())}")
    print("\n| item | paper | ours | ours/paper | note |\n|---|---|---|---|---|")
    for r in rows:
        print("| " + " | ".join(r) + " |")
    print(f"\n({name}: {seconds:.1f} s)", flush=True)


def run_parts(title, doc, parts, argv=None):
    """Parse the command line, name the machine, run and print every chosen part
    (``parts[name](quick)`` returns its rows)."""
    args, names = parse_parts(doc, parts, argv)
    print(f"# {title}{' (quick)' if args.quick else ''}")
    print(f"machine: {machine()}")
    for name in names:
        t0 = time.perf_counter()
        rows = parts[name](args.quick)
        print_part(name, parts[name].__doc__ or "", rows, time.perf_counter() - t0)
