"""Emulated networks need root (or unprivileged user namespaces, which these tests do not use:
entering one would move the test process itself) and pyroute2. CI runs as root; elsewhere the
tests that build networks skip with the reason (pytest -rs prints it). Every test here must
leave no namespace of ours behind: an autouse check compares before and after."""

import os

import pytest


def _why_not():
    try:
        import pyroute2  # noqa: F401
    except ImportError:
        return "pyroute2 is not installed (pip install 'topocoll[emulate]')"
    from topocoll.emulate.system import in_user_namespace, privileged

    if not privileged() or in_user_namespace():
        return ("building emulated networks needs root (CAP_SYS_ADMIN and CAP_NET_ADMIN in the "
                "machine's own user namespace); CI runs as root")
    if not os.path.isdir("/proc/self/ns"):
        return "this kernel has no namespaces"
    return None


WHY_NOT = _why_not()
needs_root = pytest.mark.skipif(WHY_NOT is not None, reason=f"emulation: {WHY_NOT}")


def our_namespaces():
    from topocoll.emulate.runs import PREFIX
    from topocoll.emulate.system import NETNS_DIR

    try:
        return {n for n in os.listdir(NETNS_DIR) if n.startswith(PREFIX)}
    except OSError:
        return set()


@pytest.fixture(autouse=True)
def nothing_left_behind():
    before = our_namespaces()
    yield
    left = our_namespaces() - before
    assert not left, f"namespaces left behind: {sorted(left)}"
