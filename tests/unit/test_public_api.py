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


def test_replay_is_the_runner_package_and_no_export_is_shadowed_by_a_subpackage() -> None:
    """``failforge.replay`` is the runner package (its ``replay`` the function), whatever was imported first,
    and no top-level export shares its name with a subpackage (importing one would shadow the export)."""
    code = (
        "import failforge.fidelity, failforge.seeds, failforge.replay, failforge; import inspect;"
        " print(inspect.ismodule(failforge.replay), inspect.isfunction(failforge.replay.replay),"
        " inspect.isfunction(failforge.record))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.stdout.split() == ["True", "True", "True"], out.stderr
    import pkgutil

    subpackages = {m.name for m in pkgutil.iter_modules(failforge.__path__)}
    assert not subpackages & set(failforge._EXPORTS), subpackages & set(failforge._EXPORTS)


def test_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="has no attribute 'nope'"):
        failforge.nope  # noqa: B018
