"""The public API: ``failforge.X`` is the object its module defines, whatever was imported before."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

import failforge


@pytest.mark.parametrize("name", sorted(failforge._EXPORTS))
def test_every_exported_name_is_the_object_its_module_defines(name: str) -> None:
    module = importlib.import_module(failforge._EXPORTS[name])
    assert getattr(failforge, name) is getattr(module, name)
    assert name in failforge.__all__


def test_replay_is_the_function_whatever_was_imported_first() -> None:
    """Importing the fidelity package (where replay lives) must not shadow ``failforge.replay``."""
    code = "import failforge.fidelity, failforge.seeds, failforge.episode, failforge; import inspect; print(inspect.isfunction(failforge.replay), inspect.isfunction(failforge.record))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.stdout.split() == ["True", "True"], out.stderr


def test_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="has no attribute 'nope'"):
        failforge.nope  # noqa: B018
