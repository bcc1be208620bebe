"""The ``topocoll`` command (see :mod:`topocoll.cli.main`)."""
