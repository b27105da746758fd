"""The build backend of the `gatehouse` Python package (PEP 517, in-tree).

Why not setuptools or maturin: the wheel's one native file is `libgatehouse_ffi`, built
ONCE per CI run with cargo's `mobile` profile (the library the phones ship) and shared by
the Swift checks, the Kotlin jar and this wheel; maturin would compile the crate again.
This backend only packs files:

    gatehouse/__init__.py, gatehouse/gatehouse_ffi.py   (uniffi-generated, committed)
    gatehouse/libgatehouse_ffi.so                        (the native library)
    gatehouse-<version>.dist-info/{METADATA,WHEEL,RECORD}

The wheel is tagged `py3-none-<platform>` (the library is loaded with ctypes, so any
CPython 3 works, on the platform the library was built for). The library is taken from
$GATEHOUSE_FFI_LIBRARY when set (bindings/run-tests.sh points it at cargo's build), else
from `gatehouse/` beside this package's sources. Build with any PEP 517 frontend:

    GATEHOUSE_FFI_LIBRARY=$CARGO_TARGET_DIR/mobile/libgatehouse_ffi.so \\
        python3 -m pip wheel --no-deps --no-build-isolation -w dist bindings/python
"""

import base64
import hashlib
import io
import os
import re
import sys
import sysconfig
import tarfile
import zipfile
from pathlib import Path

SOURCE = Path(__file__).resolve().parent.parent
PACKAGE = "gatehouse"
LIBRARY_NAMES = ("libgatehouse_ffi.so", "libgatehouse_ffi.dylib", "gatehouse_ffi.dll")
# Fixed timestamps: the same inputs give the same wheel, byte for byte.
ZIP_TIME = (2026, 1, 1, 0, 0, 0)


def _project_field(name):
    text = (SOURCE / "pyproject.toml").read_text(encoding="utf-8")
    section = text.split("[project]", 1)[1].split("\n[", 1)[0]
    match = re.search(rf'^{name}\s*=\s*"([^"]*)"', section, re.MULTILINE)
    if match is None:
        raise RuntimeError(f"pyproject.toml has no [project] {name}")
    return match.group(1)


def _native_library():
    configured = os.environ.get("GATEHOUSE_FFI_LIBRARY", "")
    if configured:
        path = Path(configured)
        if not path.is_file():
            raise RuntimeError(f"GATEHOUSE_FFI_LIBRARY={configured} is not a file")
        return path
    for name in LIBRARY_NAMES:
        path = SOURCE / PACKAGE / name
        if path.is_file():
            return path
    raise RuntimeError(
        "no native library: build it (cargo build -p gatehouse-ffi --lib --profile mobile) and "
        "set GATEHOUSE_FFI_LIBRARY to the built libgatehouse_ffi, or copy it into bindings/python/gatehouse/"
    )


def _platform_tag():
    return re.sub(r"[^A-Za-z0-9]", "_", sysconfig.get_platform())


def _metadata():
    name, version = _project_field("name"), _project_field("version")
    lines = [
        "Metadata-Version: 2.1",
        f"Name: {name}",
        f"Version: {version}",
        f"Summary: {_project_field('description')}",
        f"Requires-Python: {_project_field('requires-python')}",
        "License: Apache-2.0",
    ]
    return name, version, "\n".join(lines) + "\n"


def _record_line(path, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{path},sha256={digest},{len(data)}"


def _files():
    """(path in the wheel, bytes, unix mode) of the package."""
    files = []
    for source in sorted((SOURCE / PACKAGE).glob("*.py")):
        files.append((f"{PACKAGE}/{source.name}", source.read_bytes(), 0o644))
    library = _native_library()
    files.append((f"{PACKAGE}/{library.name}", library.read_bytes(), 0o755))
    return files


def _write(archive, path, data, mode=0o644):
    info = zipfile.ZipInfo(path, date_time=ZIP_TIME)
    info.external_attr = (0o100000 | mode) << 16
    info.compress_type = zipfile.ZIP_DEFLATED
    archive.writestr(info, data)


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    name, version, metadata = _metadata()
    tag = f"py3-none-{_platform_tag()}"
    dist_info = f"{name}-{version}.dist-info"
    wheel = f"Wheel-Version: 1.0\nGenerator: gatehouse_build\nRoot-Is-Purelib: false\nTag: {tag}\n"
    entries = _files() + [
        (f"{dist_info}/METADATA", metadata.encode(), 0o644),
        (f"{dist_info}/WHEEL", wheel.encode(), 0o644),
        (f"{dist_info}/top_level.txt", f"{PACKAGE}\n".encode(), 0o644),
    ]
    record = [_record_line(path, data) for path, data, _ in entries]
    record.append(f"{dist_info}/RECORD,,")
    file_name = f"{name}-{version}-{tag}.whl"
    with zipfile.ZipFile(Path(wheel_directory) / file_name, "w") as archive:
        for path, data, mode in entries:
            _write(archive, path, data, mode)
        _write(archive, f"{dist_info}/RECORD", ("\n".join(record) + "\n").encode())
    return file_name


def build_sdist(sdist_directory, config_settings=None):
    """The sources (no native library: a wheel build needs one, see the module docs)."""
    name, version, metadata = _metadata()
    base = f"{name}-{version}"
    file_name = f"{base}.tar.gz"
    sources = [SOURCE / "pyproject.toml", Path(__file__)] + sorted((SOURCE / PACKAGE).glob("*.py"))
    with tarfile.open(Path(sdist_directory) / file_name, "w:gz") as archive:
        for source in sources:
            relative = source.relative_to(SOURCE).as_posix()
            archive.add(source, arcname=f"{base}/{relative}")
        info = tarfile.TarInfo(f"{base}/PKG-INFO")
        data = metadata.encode()
        info.size = len(data)
        archive.addfile(info, io.BytesIO(data))
    return file_name


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


if __name__ == "__main__":
    # `python3 build_backend/gatehouse_build.py OUT_DIR`: build the wheel without a frontend.
    print(build_wheel(sys.argv[1] if len(sys.argv) > 1 else "."))
