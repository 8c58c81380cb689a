"""setup.py: only what pyproject.toml cannot say. A wheel that carries
libclformer.so.0 in the package (scripts/wheel.sh copies it in before
`pip wheel`) is a platform wheel, py3-none-linux_x86_64: its library is
machine code, but it is loaded with ctypes, so it fits every Python 3 on
that platform (`auditwheel repair`, which scripts/wheel.sh runs next,
copies in the libraries it links and retags it manylinux). Without the library (`pip install ./python`) the package is
pure Python, py3-none-any, and finds an installed library at run time."""

import os

from setuptools import setup
from setuptools.dist import Distribution

try:  # setuptools 70.1 and later carry bdist_wheel; Debian 12's 66 takes it from python3-wheel
    from setuptools.command.bdist_wheel import bdist_wheel
except ImportError:
    try:
        from wheel.bdist_wheel import bdist_wheel
    except ImportError:  # no wheel to make: pip says so ("invalid command 'bdist_wheel'")
        bdist_wheel = None

HERE = os.path.dirname(os.path.abspath(__file__))
BUNDLED = os.path.exists(os.path.join(HERE, "clformer", "libclformer.so.0"))


class Bundled(Distribution):
    def has_ext_modules(self):
        # installs into platlib, and bdist_wheel marks the wheel not pure
        return BUNDLED


CMDCLASS = {}
if bdist_wheel is not None:
    class PlatformWheel(bdist_wheel):
        def get_tag(self):
            python, abi, plat = super().get_tag()
            return ("py3", "none", plat) if BUNDLED else (python, abi, plat)

    CMDCLASS["bdist_wheel"] = PlatformWheel

setup(distclass=Bundled, cmdclass=CMDCLASS)
