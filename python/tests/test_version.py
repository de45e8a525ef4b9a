"""One version: the package's __version__ is the library's, which is CMake's project(VERSION)."""
import pathlib
import re

import vkgmm


def test_version_is_the_projects():
    cmake = (pathlib.Path(__file__).resolve().parents[2] / "CMakeLists.txt").read_text()
    declared = re.search(r"project\(vkgmm VERSION (\d+\.\d+\.\d+)", cmake).group(1)
    assert vkgmm.__version__ == declared
    assert "__version__" in vkgmm.__all__
