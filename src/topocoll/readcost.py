"""What parsing a file will cost, estimated from the bytes read so far, and the tokens no file
topocoll reads can hold.

:class:`ReadCost` watches the content of a file as it is read (after decompression), piece by
piece, with numpy. The first non-blank byte says the format: ``{`` or ``[`` JSON, ``<`` XML,
anything else text read line by line (ASTRA-sim workloads, layer lists). It refuses, as soon
as the bytes show it:

* a JSON string, an XML text or attribute run (bytes between ``<`` and ``>``), or a text line
  longer than :data:`MAX_TOKEN` (1 MiB: the longest in any file topocoll writes is a topology
  name of a few kilobytes; parsing a longer one only multiplies it);

and :meth:`ReadCost.peak` estimates the bytes the read and the parse hold at their peak from
what it counted: the content and its decoded text, and per JSON container, value and string,
XML element and attribute, or text line what Python's parsers allocate for one (measured on
CPython 3.11 with the largest per-token costs of dense shapes such as ``[{},{},...]``).

>>> cost = ReadCost("x.json")
>>> cost.feed(b'{"a": [1, 2, {"b": "text"}]}')
>>> cost.kind, cost.containers, cost.values, cost.strings
('json', 3, 2, 3)
>>> cost.feed(b'') or cost.peak() > 0
True
>>> bomb = ReadCost("bomb.json")
>>> bomb.feed(b'["' + b"a" * (MAX_TOKEN + 1))
Traceback (most recent call last):
...
topocoll.errors.ResourceLimitError: bomb.json: a string longer than the limit of 1MiB (from byte 1): no file topocoll reads holds one, so the read stops here (is it a schedule, topology or profile file?)
"""

from .errors import ResourceLimitError
from .units import format_size

__all__ = ["ReadCost", "MAX_TOKEN", "COSTS"]

#: Longest JSON string, XML run between markup, or text line, in bytes.
MAX_TOKEN = 1 << 20

#: Bytes Python's parsers hold per token (see the module): JSON containers, values (a comma
#: each, a list slot or dict entry and a number), strings (a str object); XML elements
#: (ElementTree's Element and its dict) and attributes; text lines (the line and its fields).
COSTS = {"json_container": 160, "json_value": 48, "json_string": 64,
         "xml_element": 1000, "xml_attribute": 160, "text_line": 400}

_BLANKS = b" \t\r\n"
_STEP = 1 << 20         # bytes counted at a time
_WHAT = {"json": "a string", "xml": "text or an attribute between < and >", "text": "a line"}


class ReadCost:
    """Counts the tokens of one file's content as it is read (see the module); ``name`` starts
    every error message."""

    def __init__(self, name):
        self.name = name
        self.kind = None           # "json", "xml" or "text" once a non-blank byte was seen
        self.bytes = 0
        self.containers = self.values = self.strings = 0     # JSON
        self.elements = self.attributes = 0                  # XML
        self.lines = 0                                       # text
        self.wide = False          # a byte >= 0x80 seen: the decoded text may be wider
        self._open = None          # JSON: where the string read now started, or None
        self._slashes = 0          # JSON: backslashes that ended the last piece, in a string
        self._since = 0            # XML, text: bytes since the last delimiter

    def feed(self, piece):
        """Count ``piece`` (the next bytes of the content); raise
        :class:`~topocoll.errors.ResourceLimitError` on a token too long."""
        view = memoryview(piece)
        for at in range(0, len(view), _STEP):     # bounded temporaries for any piece
            self._feed(view[at:at + _STEP])

    def _feed(self, piece):
        import numpy as np

        if self.kind is None:
            piece = bytes(piece)
            head = piece.lstrip(_BLANKS)
            if not head:
                self.bytes += len(piece)
                return
            self.kind = {b"{": "json", b"[": "json", b"<": "xml"}.get(head[:1], "text")
        a = np.frombuffer(piece, dtype=np.uint8)
        self.wide = self.wide or bool((a >= 0x80).any())
        if self.kind == "json":
            self._json(a, np)
        else:
            self._delimited(a, np)
        self.bytes += len(piece)

    def _json(self, a, np):
        self.containers += int(np.count_nonzero((a == 0x7B) | (a == 0x5B)))
        self.values += int(np.count_nonzero(a == 0x2C))
        quotes = np.flatnonzero(a == 0x22)
        slash = a == 0x5C
        if slash.any() or self._slashes:
            quotes = quotes[self._unescaped(quotes, slash, np)]
        else:
            self._slashes = 0
        at = self.bytes + quotes          # offsets in the content
        first = 0
        if self._open is not None and at.size:
            self._check(at[0] - self._open - 1, self._open)
            self.strings += 1
            self._open, first = None, 1
        rest = at[first:]
        if self._open is None and rest.size:
            opens, closes = rest[0::2], rest[1::2]
            if closes.size:
                lengths = closes - opens[:closes.size] - 1
                i = int(np.argmax(lengths))
                self._check(int(lengths[i]), int(opens[i]))
                self.strings += int(closes.size)
            if opens.size > closes.size:
                self._open = int(opens[-1])
        if self._open is not None:        # a string still open at the end of the piece
            self._check(self.bytes + a.size - self._open - 1, self._open)

    def _unescaped(self, quotes, slash, np):
        """Which ``quotes`` no odd run of backslashes escapes (carrying the run that ended
        the last piece); remembers the run that ends this one."""
        index = np.arange(slash.size, dtype=np.int32)
        last = np.maximum.accumulate(np.where(slash, -1, index))   # last non-backslash <= i
        before = quotes - 1
        safe = np.maximum(before, 0)
        run = np.where(before >= 0, before - last[safe], 0)
        reaches_start = (before < 0) | (last[safe] < 0)
        run = run + np.where(reaches_start, self._slashes, 0)
        tail = slash.size - 1 - int(last[-1])
        self._slashes = tail + (self._slashes if last[-1] < 0 else 0)
        return run % 2 == 0

    def _delimited(self, a, np):
        if self.kind == "xml":
            marks = np.flatnonzero((a == 0x3C) | (a == 0x3E))
            self.elements += int(np.count_nonzero(a == 0x3C))
            self.attributes += int(np.count_nonzero(a == 0x3D))
        else:
            marks = np.flatnonzero(a == 0x0A)
            self.lines += int(marks.size)
        if marks.size == 0:
            self._since += a.size
            self._check(self._since, self.bytes + a.size - self._since)
            return
        gaps = np.diff(marks) - 1
        first = self._since + int(marks[0])
        longest = max(first, int(gaps.max()) if gaps.size else 0)
        self._check(longest, self.bytes)
        self._since = a.size - 1 - int(marks[-1])
        self._check(self._since, self.bytes + int(marks[-1]) + 1)

    def _check(self, length, start):
        if length > MAX_TOKEN:
            raise ResourceLimitError(
                f"{self.name}: {_WHAT[self.kind]} longer than the limit of "
                f"{format_size(MAX_TOKEN)} (from byte {max(int(start), 0)}): no file topocoll "
                "reads holds one, so the read stops here (is it a schedule, topology or "
                "profile file?)")

    def peak(self):
        """Estimated bytes the read and the parse hold at their peak, beyond what the process
        held before the read: the content twice (its pieces and their join), its decoded text
        (up to four bytes a byte when a byte above 0x7F was seen) and the parsed tokens."""
        decoded = (4 if self.wide else 1) * self.bytes
        tokens = (COSTS["json_container"] * self.containers + COSTS["json_value"] * self.values
                  + COSTS["json_string"] * self.strings
                  + COSTS["xml_element"] * self.elements
                  + COSTS["xml_attribute"] * self.attributes
                  + COSTS["text_line"] * self.lines)
        return 2 * self.bytes + decoded + tokens
