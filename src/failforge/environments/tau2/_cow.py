"""Copy-on-access databases: an episode's DB that deep-copies only the records its tools touch.

tau2's evaluator builds an environment per check, each on its own copy of the domain DB; a full deep
copy of airline's (2,800 pydantic records) costs about half a second, yet a run's tools read a handful.
A :class:`CopyOnAccessDict` starts holding the template's records themselves and replaces a record by
its deep copy the first time Python code reaches it (``d[k]``, ``get``, ``values``, ``items``, ``pop``,
...), so whatever a tool gets, and may mutate, is its own. Code that reads the dict's storage directly,
below Python (pydantic's serializer for ``model_dump``, hence tau2's ``get_db_hash``), sees either a
template record that nobody could have mutated or the episode's own copy: the dump, and the hash, are the
ones a full deep copy would give. :func:`cow_copy` builds such a DB; ``tests/unit/test_tau2_cow.py`` and
the evaluator's agreement check in ``scripts/tau2_eval_cost.py`` hold it to the full copy's hash.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

from pydantic import BaseModel

_MISSING = object()


class CopyOnAccessDict(dict):  # type: ignore[type-arg]
    """A dict of records shared with a template until Python code reaches one (see the module)."""

    __slots__ = ("_own",)

    def __init__(self, template: dict[Any, Any]) -> None:
        super().__init__(template)
        self._own: set[Any] = set()

    def _mine(self, key: Any) -> Any:
        value = dict.__getitem__(self, key)
        if key not in self._own:
            value = copy.deepcopy(value)
            dict.__setitem__(self, key, value)
            self._own.add(key)
        return value

    def __getitem__(self, key: Any) -> Any:
        return self._mine(key)

    def get(self, key: Any, default: Any = None) -> Any:
        return self._mine(key) if dict.__contains__(self, key) else default

    def __setitem__(self, key: Any, value: Any) -> None:
        dict.__setitem__(self, key, value)
        self._own.add(key)

    def setdefault(self, key: Any, default: Any = None) -> Any:
        if dict.__contains__(self, key):
            return self._mine(key)
        self[key] = default
        return default

    def pop(self, key: Any, default: Any = _MISSING) -> Any:
        if dict.__contains__(self, key):
            value = self._mine(key)
            dict.__delitem__(self, key)
            self._own.discard(key)
            return value
        if default is _MISSING:
            raise KeyError(key)
        return default

    def popitem(self) -> tuple[Any, Any]:
        key = next(reversed(self.keys()))
        return key, self.pop(key)

    def values(self) -> Any:  # a list, not a live view: each value is the episode's own
        return [self._mine(k) for k in list(dict.keys(self))]

    def items(self) -> Any:
        return [(k, self._mine(k)) for k in list(dict.keys(self))]

    def __iter__(self) -> Iterator[Any]:
        return iter(list(dict.keys(self)))

    def copy(self) -> dict[Any, Any]:
        return {k: self._mine(k) for k in list(dict.keys(self))}

    def __deepcopy__(self, memo: dict[int, Any]) -> dict[Any, Any]:
        return {copy.deepcopy(k, memo): copy.deepcopy(self._mine(k), memo) for k in list(dict.keys(self))}

    def __reduce__(self) -> Any:  # pickles as the plain dict it stands for
        return (dict, (self.copy(),))


def cow_copy(db: BaseModel) -> BaseModel:
    """A copy of ``db`` whose dict-of-records fields copy on access and whose other fields are deep copies."""
    fields: dict[str, Any] = {}
    for name in type(db).model_fields:
        value = getattr(db, name)
        fields[name] = CopyOnAccessDict(value) if isinstance(value, dict) else copy.deepcopy(value)
    return db.model_copy(update=fields)
