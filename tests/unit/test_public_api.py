import failforge


def test_every_exported_name_resolves():
    for name in failforge.__all__:
        assert getattr(failforge, name) is not None, name


def test_unknown_name_is_an_attribute_error():
    try:
        failforge.nope  # noqa: B018
    except AttributeError as exc:
        assert "nope" in str(exc)
    else:
        raise AssertionError("expected AttributeError")
