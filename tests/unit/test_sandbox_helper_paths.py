"""The sandbox server's file operations and workspace walk, on a real directory.

They run inside the sandbox in production; here they run on a temporary directory, which is the same
code on the same kind of filesystem. What matters: links are never followed on the way to a file, a
missing parent is created, and the listing of an ordinary tree is exactly the one the fingerprint has
always been built from.
"""

from __future__ import annotations

import base64
import hashlib
import os

import pytest

from failforge.environments.sandbox import _helper


def _write(root, path: str, text: str) -> dict:
    return _helper.handle(
        {
            "op": "write",
            "root": str(root),
            "path": path,
            "content_b64": base64.b64encode(text.encode()).decode(),
            "list": False,
        }
    )


def _read(root, path: str) -> dict:
    return _helper.handle({"op": "read", "root": str(root), "path": path, "limit": 1000, "list": False})


def test_write_then_read_creates_parents(tmp_path):
    assert _write(tmp_path, "pkg/sub/mod.py", "X = 1\n") == {"ok": True}
    assert (tmp_path / "pkg" / "sub" / "mod.py").read_text() == "X = 1\n"
    reply = _read(tmp_path, "pkg/sub/mod.py")
    assert base64.b64decode(reply["content_b64"]) == b"X = 1\n"


@pytest.mark.parametrize("link_at", ["leaf", "middle"])
def test_links_are_refused_wherever_they_are_in_the_path(tmp_path, link_at):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret").write_text("OUTSIDE")
    ws = tmp_path / "ws"
    ws.mkdir()
    if link_at == "leaf":
        os.symlink(outside / "secret", ws / "secret")
        path = "secret"
    else:
        os.symlink(outside, ws / "d")
        path = "d/secret"
    read = _read(ws, path)
    assert read["ok"] is False and read["error_type"] == "PermissionError" and "symbolic link" in read["error"]
    write = _write(ws, path if link_at == "leaf" else "d/planted", "x")
    assert write["ok"] is False and write["error_type"] == "PermissionError"
    assert sorted(os.listdir(outside)) == ["secret"] and (outside / "secret").read_text() == "OUTSIDE"


def test_a_link_inside_the_workspace_is_refused_too(tmp_path):
    """Even a link that stays inside is not followed: the rule is simple, so it cannot be raced."""
    (tmp_path / "real").mkdir()
    (tmp_path / "real" / "f").write_text("x")
    os.symlink("real", tmp_path / "alias")
    assert _read(tmp_path, "alias/f")["error_type"] == "PermissionError"


def test_paths_that_leave_are_refused(tmp_path):
    for bad in ("../x", "a/../../x", ""):
        assert _read(tmp_path, bad)["error_type"] == "PermissionError"


def test_listing_of_an_ordinary_tree_is_unchanged(tmp_path):
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "x.txt").write_text("abc")
    (tmp_path / "a.py").write_text("print(1)\n")
    (tmp_path / "__pycache__").mkdir()
    (tmp_path / "__pycache__" / "a.cpython-311.pyc").write_bytes(b"junk")
    os.symlink("/etc/passwd", tmp_path / "leak")
    os.mkfifo(tmp_path / "pipe")
    listing = _helper.list_workspace(str(tmp_path), ("__pycache__", "*.pyc"))

    def sha(data):
        return hashlib.sha256(data).hexdigest()

    assert listing == {
        "entries": [
            ["f", "a.py", 9, sha(b"print(1)\n")],
            ["d", "b", 0, ""],
            ["f", "b/x.txt", 3, sha(b"abc")],
            ["l", "leak", len("/etc/passwd"), sha(b"/etc/passwd")],
            ["o", "pipe", 0, "mode:" + oct(0o010000)],
        ],
        "overflow": False,
    }


def test_listing_stops_at_the_entry_cap(tmp_path):
    for i in range(12):
        (tmp_path / f"f{i:02}").write_text("x")
    listing = _helper.list_workspace(str(tmp_path), (), max_entries=5)
    assert listing["overflow"] is True and len(listing["entries"]) == 5


def test_a_directory_swapped_for_a_link_is_not_walked(tmp_path):
    """What the walk does when a directory is a link by the time it is opened: it reports, never follows."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "only-outside").write_text("x")
    ws = tmp_path / "ws"
    ws.mkdir()
    root_fd = os.open(ws, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.symlink(outside, ws / "d")
        with pytest.raises(OSError):
            _helper.open_dir_at(root_fd, "d")
    finally:
        os.close(root_fd)
