"""An async framework's run starts from synchronous code even where an event loop already runs (a
notebook, a thread that drove a MiniWoB++ page): it then gets a loop in a thread of its own."""

from __future__ import annotations

import asyncio
import threading

import pytest

from failforge.harnesses._adapter import run_async


async def _where() -> tuple[str, int]:
    await asyncio.sleep(0)
    return threading.current_thread().name, id(asyncio.get_running_loop())


async def _boom() -> None:
    raise ValueError("from the framework")


def test_without_a_running_loop_the_coroutine_runs_here() -> None:
    name, _ = run_async(_where())
    assert name == threading.current_thread().name


def test_inside_a_running_loop_it_runs_on_a_fresh_loop_in_its_own_thread_and_errors_come_back() -> None:
    async def caller() -> tuple[tuple[str, int], int]:
        return run_async(_where()), id(asyncio.get_running_loop())  # synchronous code called from a loop

    (name, inner), outer = asyncio.run(caller())
    assert name == "failforge-framework-loop" and inner != outer

    async def failing() -> None:
        run_async(_boom())

    with pytest.raises(ValueError, match="from the framework"):
        asyncio.run(failing())
