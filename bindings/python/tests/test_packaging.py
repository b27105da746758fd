"""The package under test is the installed wheel, with its native library inside."""

import importlib.metadata
import pathlib
import sys

import gatehouse

from conftest import WORKSPACE


def test_the_package_is_the_installed_wheel_with_its_native_library():
    package = pathlib.Path(gatehouse.__file__).resolve().parent
    prefix = pathlib.Path(sys.prefix).resolve()
    assert prefix in package.parents, f"{package} is not installed in this environment ({prefix})"
    assert WORKSPACE not in package.parents, f"{package} is the source tree"
    assert (package / "libgatehouse_ffi.so").is_file()

    dist = importlib.metadata.distribution("gatehouse")
    assert dist.version == "0.1.0"
    files = {str(f) for f in dist.files or []}
    assert "gatehouse/libgatehouse_ffi.so" in files
    assert "gatehouse/gatehouse_ffi.py" in files
    wheel = dist.read_text("WHEEL") or ""
    assert "Root-Is-Purelib: false" in wheel and "Tag: py3-none-" in wheel
