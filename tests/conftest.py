"""pytest configuration: keep hypothesis runs bounded and repeatable in CI."""

from hypothesis import HealthCheck, settings

# derandomize: the same examples on every run, so a run cannot draw a case the others never
# met (one draw of the exact-optimum ILP test ran for over ten minutes on one CI-like run)
settings.register_profile("ci", max_examples=40, deadline=None, derandomize=True,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("ci")


import os  # noqa: E402

import pytest  # noqa: E402


@pytest.fixture(autouse=True)
def _never_replace_a_device(monkeypatch):
    """Some tests write into /dev/null and /dev/full to check that devices are streamed into.
    Should that ever regress, the atomic writer would replace the device itself (as root):
    refuse any replacement under /dev in this process, so a regression fails a test instead."""
    real = os.replace

    def guarded(src, dst, *args, **kwargs):
        if os.path.realpath(os.fspath(dst)).startswith("/dev/"):
            raise AssertionError(f"a test tried to replace the device {dst}")
        return real(src, dst, *args, **kwargs)
    monkeypatch.setattr(os, "replace", guarded)
