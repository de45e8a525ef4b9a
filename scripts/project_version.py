"""The project's one version: CMake's project(VERSION) in CMakeLists.txt. setup.py, the Python tests and
the packaging checks read it through project_version(); `python3 scripts/project_version.py` prints it."""
import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[1]


def project_version(root=ROOT):
    text = (pathlib.Path(root) / "CMakeLists.txt").read_text()
    found = re.search(r"^project\(vkgmm VERSION (\d+\.\d+\.\d+)", text, re.M)
    if not found:
        raise RuntimeError(f"no 'project(vkgmm VERSION x.y.z' line in {root}/CMakeLists.txt")
    return found.group(1)


if __name__ == "__main__":
    print(project_version())
