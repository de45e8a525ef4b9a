"""The vkgmm Python package built through CMake (pyproject.toml names this backend): the extension module
vkgmm._vkgmm is CMake's vkgmm_python target (self-contained: the library is linked in statically), the
pure-Python files are python/vkgmm/, and the version is CMake's project(VERSION), the one the library
reports."""
import os
import pathlib
import shutil
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT / "scripts"))
from project_version import project_version  # noqa: E402


class CMakeBuild(build_ext):
    """Configures a Release build of the library and the extension alone (no tests, examples or tools) for
    the interpreter running pip, then copies the module to where setuptools packs it."""

    def build_extension(self, ext):
        build = pathlib.Path(self.build_temp).resolve() / "cmake"
        config = ["-DCMAKE_BUILD_TYPE=Release", "-DVKGMM_BUILD_TESTS=OFF", "-DVKGMM_BUILD_EXAMPLES=OFF",
                  "-DVKGMM_BUILD_PYTHON=ON", f"-DPython3_EXECUTABLE={sys.executable}"]
        # CMake reads CFLAGS, CXXFLAGS and LDFLAGS at a build folder's first configure only and keeps them:
        # each build passes this environment's, so that the folder never builds with an earlier one's (a
        # sanitizer run's flags, say, for an interpreter that is not instrumented).
        ldflags = os.environ.get("LDFLAGS", "")
        config += [f"-DCMAKE_C_FLAGS={os.environ.get('CFLAGS', '')}",
                   f"-DCMAKE_CXX_FLAGS={os.environ.get('CXXFLAGS', '')}"]
        config += [f"-DCMAKE_{kind}_LINKER_FLAGS={ldflags}" for kind in ("EXE", "SHARED", "MODULE")]
        subprocess.run(["cmake", "-S", str(ROOT), "-B", str(build)] + config, check=True)
        jobs = os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL", str(os.cpu_count() or 1))
        subprocess.run(["cmake", "--build", str(build), "--target", "vkgmm_python", "--parallel", jobs], check=True)
        built = sorted((build / "python" / "vkgmm").glob("_vkgmm*.so"))
        if len(built) != 1:
            raise RuntimeError(f"expected one extension module in {build / 'python' / 'vkgmm'}, found {built}")
        target = pathlib.Path(self.get_ext_fullpath(ext.name))
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(built[0], target)


setup(
    version=project_version(),
    packages=["vkgmm"],
    package_dir={"vkgmm": "python/vkgmm"},
    package_data={"vkgmm": ["__init__.pyi", "py.typed"]},
    ext_modules=[Extension("vkgmm._vkgmm", sources=[])],
    cmdclass={"build_ext": CMakeBuild},
    # setuptools' build tree beside CMake's build/, not inside it.
    options={"build": {"build_base": "build-pip"}, "egg_info": {"egg_base": "build-pip"}},
    zip_safe=False,
)
