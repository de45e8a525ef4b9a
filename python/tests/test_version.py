"""One version: the package's __version__ is the library's, which is CMake's project(VERSION)."""
import importlib.util
import pathlib

import vkgmm


def declared_version():
    path = pathlib.Path(__file__).resolve().parents[2] / "scripts" / "project_version.py"
    spec = importlib.util.spec_from_file_location("project_version", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.project_version()


def test_version_is_the_projects():
    assert vkgmm.__version__ == declared_version()
    assert "__version__" in vkgmm.__all__
