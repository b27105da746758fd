"""The package under test is the installed wheel (built by maturin), with its native
library, its generated module and its type stubs inside."""

import ast
import importlib.metadata
import pathlib
import sys

import gatehouse

from conftest import PYTHON_DIR, WORKSPACE

DISTRIBUTION = "gatehouse-sdk"
PACKAGE = pathlib.Path(gatehouse.__file__).resolve().parent


def test_the_package_is_the_installed_wheel_with_its_native_library():
    prefix = pathlib.Path(sys.prefix).resolve()
    assert prefix in PACKAGE.parents, f"{PACKAGE} is not installed in this environment ({prefix})"
    assert WORKSPACE not in PACKAGE.parents, f"{PACKAGE} is the source tree"
    assert (PACKAGE / "_ffi" / "libgatehouse_ffi.so").is_file()

    dist = importlib.metadata.distribution(DISTRIBUTION)
    assert dist.version == "0.1.0"
    files = {str(f) for f in dist.files or []}
    assert "gatehouse/_ffi/libgatehouse_ffi.so" in files
    assert "gatehouse/_ffi/gatehouse_ffi.py" in files
    wheel = dist.read_text("WHEEL") or ""
    # Any CPython 3 (ctypes), on manylinux (glibc) x86_64: never installed on musl.
    assert "Root-Is-Purelib: false" in wheel and "Tag: py3-none-manylinux_" in wheel, wheel


def test_the_package_is_typed():
    files = {str(f) for f in importlib.metadata.distribution(DISTRIBUTION).files or []}
    for name in ("gatehouse/py.typed", "gatehouse/__init__.pyi", "gatehouse/_ffi/gatehouse_ffi.pyi"):
        assert name in files, f"{name} is not in the wheel"


def test_the_shipped_module_and_stub_are_the_committed_ones():
    # maturin generates the module from the library it compiled; `cargo xtask bindings
    # --check` keeps the committed copy current, so the two are the same file.
    for relative in ("_ffi/gatehouse_ffi.py", "_ffi/gatehouse_ffi.pyi", "__init__.py", "__init__.pyi"):
        installed = (PACKAGE / relative).read_bytes()
        committed = (PYTHON_DIR / "gatehouse" / relative).read_bytes()
        assert installed == committed, f"the installed {relative} differs from the committed one"


def test_the_stub_declares_every_name_the_package_exports():
    tree = ast.parse((PACKAGE / "__init__.pyi").read_text(encoding="utf-8"))
    declared = set()
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module == "_ffi.gatehouse_ffi":
            declared |= {alias.asname for alias in node.names if alias.asname == alias.name}
        elif isinstance(node, ast.ClassDef):
            declared.add(node.name)
    assert declared == set(gatehouse.__all__)
