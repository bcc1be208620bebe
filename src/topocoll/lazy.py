"""Lazy package attributes: a package names what each of its submodules defines and imports a
submodule the first time one of its names is used, so a small job imports only what it needs
(``topocoll verify`` of a small file never loads scipy).

>>> import topocoll.synth as synth
>>> "generate" in dir(synth), callable(synth.generate)
(True, True)
"""

import importlib
import importlib.util
import sys

__all__ = ["lazy_attributes"]


def lazy_attributes(package, table, public):
    """The ``__getattr__`` and ``__dir__`` of a lazy package.

    Parameters
    ----------
    package : str
        The package's ``__name__``.
    table : dict
        Submodule (relative, ``".model"``) -> the public names it defines.
    public : list of str
        The package's ``__all__``: what ``dir()`` lists before anything is imported.

    A name of the table resolves to the submodule's attribute, any other name to a submodule
    of that name (as an eager ``__init__`` that imported it would); either is then stored on
    the package, so the next access is a plain attribute.
    """
    origin = {name: module for module, names in table.items() for name in names}

    def __getattr__(name):
        if name in origin:
            value = getattr(importlib.import_module(origin[name], package), name)
        elif not name.startswith("__") and importlib.util.find_spec(f"{package}.{name}"):
            value = importlib.import_module(f"{package}.{name}")
        else:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        setattr(sys.modules[package], name, value)
        return value

    def __dir__():
        return sorted(set(vars(sys.modules[package])) | set(public))

    return __getattr__, __dir__
