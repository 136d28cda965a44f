"""``python -m evalsite.checks.private_imports``: private names taken from another module are named."""

from pathlib import Path

from evalsite.checks.private_imports import is_private, main, offences


def _package(root: Path) -> None:
    pkg = root / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "a.py").write_text("def _helper():\n    return 1\n\n\ndef public():\n    return _helper()\n")
    (pkg / "_hidden.py").write_text("X = 1\n")


def test_private_names_are_told_from_public_and_dunder_ones():
    assert [is_private(n) for n in ("_x", "__x", "x", "__version__", "x_")] == [
        True,
        True,
        False,
        False,
        False,
    ]


def test_each_kind_of_private_import_is_reported_with_its_line(tmp_path):
    _package(tmp_path)
    user = tmp_path / "pkg" / "sub" / "user.py"
    user.write_text(
        "import os\n"
        "from pkg.a import _helper, public\n"  # line 2: a private function of another module
        "from ..a import _helper as again\n"  # line 3: relative, resolved to pkg.a
        "import pkg._hidden\n"  # line 4: a private module
        "from pkg import a\n"
        "value = a._helper() + os._exit.__name__.count('x')\n"  # line 6: reached through the module; os is not ours
        "class C:\n"
        "    _own = 1\n"
        "print(C._own, a.public())\n"  # a class of this module: not another module
    )
    found = list(offences(user, root=tmp_path, packages=("pkg",)))
    assert [m.split(": ", 1)[0].rsplit(":", 1)[1] for m in found] == ["2", "3", "4", "6"]
    assert found[0].endswith("pkg.sub.user imports _helper from pkg.a")
    assert found[2].endswith("pkg.sub.user imports private module pkg._hidden")
    assert found[3].endswith("pkg.sub.user uses _helper of pkg.a")


def test_a_module_using_its_own_private_names_and_third_party_ones_passes(tmp_path):
    _package(tmp_path)
    assert list(offences(tmp_path / "pkg" / "a.py", root=tmp_path, packages=("pkg",))) == []
    other = tmp_path / "pkg" / "b.py"
    other.write_text("from collections import _chain_from_iterable\nfrom pkg.a import public\n")
    assert list(offences(other, root=tmp_path, packages=("pkg",))) == []


def test_the_command_exits_1_and_prints_each_offence(tmp_path, capsys, monkeypatch):
    import evalsite.checks.private_imports as check

    _package(tmp_path)
    (tmp_path / "pkg" / "c.py").write_text("from pkg.a import _helper\n")
    monkeypatch.setattr(check, "ROOT", tmp_path)
    monkeypatch.setattr(check, "PACKAGES", ("pkg",))
    assert main([]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[0].endswith("c.py:1: pkg.c imports _helper from pkg.a")
    assert out[-1].startswith("1 private name(s)")
    (tmp_path / "pkg" / "c.py").write_text("from pkg.a import public\n")
    assert main([]) == 0
