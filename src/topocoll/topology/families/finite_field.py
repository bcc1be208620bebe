"""Finite fields GF(q) for the algebraic families (drg and alltoall families).

An element of GF(p**k) is the polynomial ``c_{k-1} x^{k-1} + ... + c_0`` over Z_p modulo a fixed
monic irreducible polynomial of degree ``k``, numbered ``c_{k-1} p^{k-1} + ... + c_0``: base-``p``
digits, highest coefficient most significant. Addition is digit-wise modulo ``p``, so the
additive group is ``Z_p^k`` in the mixed-radix labelling of :mod:`topocoll.topology.symmetry`.
"""

import numpy as np

__all__ = ["prime_power", "GaloisField"]


def prime_power(q):
    """``(p, k)`` with ``q == p**k`` and ``p`` prime, or ``None``.

    >>> prime_power(9), prime_power(13), prime_power(12), prime_power(1)
    ((3, 2), (13, 1), None, None)
    """
    if q < 2:
        return None
    p = next(f for f in range(2, q + 1) if q % f == 0 or f * f > q)
    if q % p:
        p = q  # no factor up to sqrt(q): q is prime
    k, rest = 0, q
    while rest % p == 0:
        rest //= p
        k += 1
    return (p, k) if rest == 1 else None


def _poly_mod(a, f, p):
    """Remainder of the polynomial ``a`` (coefficients, lowest first) modulo monic ``f``."""
    a = list(a)
    k = len(f) - 1
    for top in range(len(a) - 1, k - 1, -1):
        c = a[top] % p
        if c:
            for i in range(k + 1):
                a[top - k + i] = (a[top - k + i] - c * f[i]) % p
    return [c % p for c in a[:k]] + [0] * max(0, k - len(a))


def _irreducible(p, k):
    """The first monic irreducible polynomial of degree ``k`` over Z_p (coefficients, lowest
    first), found by trial division by every monic polynomial of degree ``1..k//2``."""
    def monic(degree):
        for n in range(p**degree):
            yield [(n // p**i) % p for i in range(degree)] + [1]
    for f in monic(k):
        if f[0] == 0 and k > 1:
            continue
        if all(any(_poly_mod(f, g, p)) for d in range(1, k // 2 + 1) for g in monic(d)):
            return f
    raise AssertionError("unreachable: irreducible polynomials exist in every degree")


class GaloisField:
    """GF(q) for a prime power ``q``, with vectorized arithmetic on element numbers.

    >>> F = GaloisField(4)
    >>> F.mul(np.arange(4), 2).tolist(), F.add(3, 1).tolist()
    ([0, 2, 3, 1], 2)
    >>> F = GaloisField(9)     # modulo x^2 + 1: the number a + 3b is a + b x
    >>> F.poly, sorted(set(F.mul(np.arange(1, 9), np.arange(1, 9)).tolist()))
    ([1, 0, 1], [1, 2, 3, 6])
    """

    def __init__(self, q):
        found = prime_power(q)
        if found is None:
            raise ValueError(f"{q} is not a prime power")
        self.q = q
        self.p, self.k = found
        self.poly = _irreducible(self.p, self.k) if self.k > 1 else [0, 1]
        self.place = self.p ** np.arange(self.k, dtype=np.int64)   # digit i = coefficient of x^i

    def digits(self, x):
        """Coefficients of the elements ``x``: shape ``x.shape + (k,)``, lowest first."""
        x = np.asarray(x, dtype=np.int64)
        return (x[..., None] // self.place) % self.p

    def number(self, digits):
        """Element numbers from coefficient arrays (the inverse of :meth:`digits`)."""
        return (np.asarray(digits, dtype=np.int64) % self.p) @ self.place

    def add(self, x, y):
        """``x + y`` (element-wise, broadcasting)."""
        if self.k == 1:
            return (np.asarray(x, dtype=np.int64) + np.asarray(y, dtype=np.int64)) % self.p
        return self.number(self.digits(x) + self.digits(y))

    def neg(self, x):
        """``-x``."""
        if self.k == 1:
            return (-np.asarray(x, dtype=np.int64)) % self.p
        return self.number(-self.digits(x))

    def mul(self, x, y):
        """``x * y`` (element-wise, broadcasting): polynomial product reduced modulo the field
        polynomial, top degree first."""
        if self.k == 1:
            return (np.asarray(x, dtype=np.int64) * np.asarray(y, dtype=np.int64)) % self.p
        a, b = np.broadcast_arrays(self.digits(x), self.digits(y))
        k, p = self.k, self.p
        prod = np.zeros(a.shape[:-1] + (2 * k - 1,), dtype=np.int64)
        for i in range(k):
            prod[..., i:i + k] += a[..., i:i + 1] * b
        prod %= p
        for top in range(2 * k - 2, k - 1, -1):
            c = prod[..., top:top + 1]
            prod[..., top - k:top + 1] = (prod[..., top - k:top + 1] - c * self.poly) % p
        return self.number(prod[..., :k])

    def inverse_table(self):
        """``inv[x]`` for every element (``inv[0] = 0``); needs a ``q x q`` product table, so it is
        meant for small fields."""
        x = np.arange(self.q, dtype=np.int64)
        table = self.mul(x[:, None], x[None, :])
        inv = np.zeros(self.q, dtype=np.int64)
        rows, cols = np.nonzero(table == 1)
        inv[rows] = cols
        return inv
