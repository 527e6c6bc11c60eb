"""Small immutable records without :mod:`dataclasses`.

``@dataclass(frozen=True)`` would do, but importing :mod:`dataclasses` imports :mod:`inspect`
(and through it ``ast``, ``dis``, ``tokenize``): about 20 ms of the one-shot pipe mode's
start-up on the project's machine, for the two records a parsed message is made of
(:class:`spamkit.parse.message.Message`, :class:`~spamkit.parse.message.Attachment`).
:class:`Frozen` gives what those records used of the decorator: fields that cannot be set
after construction, equality and a hash over the compared fields, a ``repr`` of the shown
ones, ``replace``, and pickling (multiprocessing hands messages to workers).

A subclass lists its fields in ``__slots__`` in the order of its ``__init__``'s parameters,
names in ``_hidden`` the fields left out of ``repr``, equality and hash, and sets its fields
in ``__init__`` with :func:`set_fields`.

>>> class Point(Frozen):
...     __slots__ = ("x", "y", "note")
...     _hidden = ("note",)
...     def __init__(self, x, y, note=""):
...         set_fields(self, x=x, y=y, note=note)
>>> p = Point(1, 2, "first")
>>> p, p == Point(1, 2), hash(p) == hash(Point(1, 2)), p.replace(y=5)
(Point(x=1, y=2), True, True, Point(x=1, y=5))
>>> p.x = 3
Traceback (most recent call last):
AttributeError: Point is immutable: cannot set 'x'
>>> p.__reduce__()                       # pickled by its constructor's arguments, every field
(<class 'spamkit.common.records.Point'>, (1, 2, 'first'))
"""

from __future__ import annotations

_set = object.__setattr__


def set_fields(record: object, **values) -> None:
    """Set ``record``'s fields in its ``__init__`` (the only place a :class:`Frozen` record's
    fields are set)."""
    for name, value in values.items():
        _set(record, name, value)


class Frozen:
    """Base of an immutable record (see the module docstring)."""

    __slots__: tuple[str, ...] = ()
    #: fields not in ``repr``, equality or hash
    _hidden: tuple[str, ...] = ()

    def compared(self) -> tuple:
        """The values of the fields equality and hash compare, in order."""
        hidden = self._hidden
        return tuple(getattr(self, name) for name in self.__slots__ if name not in hidden)

    def __setattr__(self, name: str, value) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable: cannot set {name!r}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable: cannot delete {name!r}")

    def __eq__(self, other) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self.compared() == other.compared()

    def __hash__(self) -> int:
        return hash(self.compared())

    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__slots__ if name not in self._hidden)
        return f"{type(self).__name__}({shown})"

    def __reduce__(self):
        return self.__class__, tuple(getattr(self, name) for name in self.__slots__)

    def replace(self, **changes):
        """A copy with ``changes`` (field name to new value), as :func:`dataclasses.replace`."""
        unknown = set(changes) - set(self.__slots__)
        if unknown:
            raise TypeError(f"{type(self).__name__} has no field {sorted(unknown)[0]!r}")
        return self.__class__(**{name: changes.get(name, getattr(self, name)) for name in self.__slots__})
