"""A copy-on-access DB behaves as a full deep copy: the template never changes, dumps are equal."""

from __future__ import annotations

import copy
import pickle

from pydantic import BaseModel

from failforge.environments.tau2._cow import CopyOnAccessDict, cow_copy


class Seat(BaseModel):
    number: str
    taken: bool = False


class Flight(BaseModel):
    seats: list[Seat]


class DB(BaseModel):
    flights: dict[str, Flight]
    notes: list[str]


def _template() -> DB:
    return DB(flights={f"F{i}": Flight(seats=[Seat(number=f"{i}A")]) for i in range(5)}, notes=["n"])


def test_mutations_through_every_access_path_stay_in_the_copy():
    template = _template()
    pristine = template.model_dump()
    full, cow = template.model_copy(deep=True), cow_copy(template)
    for db in (full, cow):
        db.flights["F0"].seats[0].taken = True
        db.flights.get("F1").seats.append(Seat(number="1B"))  # type: ignore[union-attr]
        next(iter(db.flights.values())).seats[0].number = "0Z"
        for key, flight in db.flights.items():
            if key == "F2":
                flight.seats.clear()
        db.flights.pop("F3")
        db.flights["F9"] = Flight(seats=[])
        db.notes.append("m")
    assert template.model_dump() == pristine  # the template is untouched
    assert cow.model_dump() == full.model_dump()  # the dump (hence tau2's hash) is the full copy's
    assert cow.model_dump_json() == full.model_dump_json()


def test_untouched_records_are_shared_until_reached():
    template = _template()
    cow = cow_copy(template)
    assert dict.__getitem__(cow.flights, "F4") is template.flights["F4"]  # shared storage, no copy yet
    assert cow.flights["F4"] is not template.flights["F4"]  # reaching it gives the episode its own


def test_copies_and_pickles_are_plain_dicts_with_the_copy_s_records():
    cow = CopyOnAccessDict({"a": [1]})
    cow["a"].append(2)
    assert copy.deepcopy(cow) == {"a": [1, 2]} and type(copy.deepcopy(cow)) is dict
    assert pickle.loads(pickle.dumps(cow)) == {"a": [1, 2]}
    assert list(cow) == ["a"] and "a" in cow and len(cow) == 1
