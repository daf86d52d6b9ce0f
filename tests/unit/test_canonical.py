import unicodedata

from failforge.canonical import MASK, canonical_hash, canonical_json, readable_diff


def test_key_order_whitespace_and_nfc_do_not_change_the_hash():
    a = {"b": 1, "a": [1, 2, {"y": "caf\u00e9"}]}
    b = {"a": [1, 2, {"y": unicodedata.normalize("NFD", "caf\u00e9")}], "b": 1.0}
    assert canonical_json(a) == canonical_json(b)
    assert canonical_hash(a) == canonical_hash(b)


def test_different_values_differ():
    assert canonical_hash({"a": 1}) != canonical_hash({"a": 2})
    assert canonical_hash([1, 2]) != canonical_hash([2, 1])


def test_mask_bare_key_and_dotted_path():
    assert canonical_json({"t": 1, "x": {"t": 2}}, mask=["t"]) == canonical_json({"t": 9, "x": {"t": 8}}, mask=["t"])
    masked = canonical_json({"x": {"t": 2}, "t": 1}, mask=["x.t"])
    assert '"t":1' in masked and MASK in masked


def test_secrets_never_appear():
    text = canonical_json({"Authorization": "Bearer sk-secret", "nested": {"api_key": "sk-2"}, "q": "ok"})
    assert "sk-secret" not in text and "sk-2" not in text and "ok" in text


def test_readable_diff_shows_changed_line():
    diff = readable_diff({"a": 1, "b": "old"}, {"a": 1, "b": "new"})
    lines = diff.splitlines()
    assert any(line.startswith("-") and '"old"' in line for line in lines)
    assert any(line.startswith("+") and '"new"' in line for line in lines)
    assert not any(line.startswith(("-", "+")) and '"a"' in line for line in lines)
