"""Builds telem._native against an installed libtelem (pkg-config telem).

The metadata is in pyproject.toml; this file only adds the extension
module, with the include and library directories and an RPATH that
`pkg-config telem` gives, so the module loads the libtelem it was built
against.  Without pkg-config or without telem.pc the build stops with what
to do.
"""
import shlex
import subprocess
import sys

from setuptools import Extension, setup


def _pkg_config(*args: str) -> list:
    try:
        out = subprocess.run(["pkg-config", *args, "telem"], check=True,
                             capture_output=True, text=True).stdout
    except FileNotFoundError:
        sys.exit("telem: pkg-config is not installed (apt-get install "
                 "pkg-config)")
    except subprocess.CalledProcessError as e:
        sys.exit("telem: pkg-config cannot find libtelem (%s). Install telem "
                 "first (cmake --install build --prefix PREFIX) and set "
                 "PKG_CONFIG_PATH=PREFIX/lib/pkgconfig"
                 % (e.stderr.strip() or "telem.pc not found"))
    return shlex.split(out)


def _extension() -> Extension:
    cflags = _pkg_config("--cflags")
    libs = _pkg_config("--libs")
    incs = [f[2:] for f in cflags if f.startswith("-I")]
    libdirs = [f[2:] for f in libs if f.startswith("-L")]
    names = [f[2:] for f in libs if f.startswith("-l")]
    return Extension("telem._native",
                     ["telem/_native.c", "telem/_native_section.c",
                      "telem/_native_util.c"],
                     include_dirs=incs, library_dirs=libdirs,
                     libraries=names, runtime_library_dirs=libdirs,
                     extra_compile_args=["-std=c11", "-Wno-cast-function-type"])


setup(ext_modules=[_extension()])
