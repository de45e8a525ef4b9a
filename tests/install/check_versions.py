"""One version: the files that state vkgmm's version agree with CMake's project(VERSION). The built
programs report it too, each checked by its own test: the CLI (ctest cli_version), the C API
(tests/test_c_api.c) and Python (python/tests/test_version.py); setup.py reads it from CMakeLists.txt.
usage: python3 check_versions.py <source dir>"""
import pathlib
import re
import sys

root = pathlib.Path(sys.argv[1])
sys.path.insert(0, str(root / "scripts"))
from project_version import project_version  # noqa: E402

version = project_version(root)
failures = []

# debian/changelog: the newest entry's version. The packages are native (debian/source/format), so it
# is the project's version with no Debian revision.
first = (root / "debian" / "changelog").read_text().splitlines()[0]
found = re.match(r"^vkgmm \(([^)]+)\) ", first)
if not found or found.group(1) != version:
    failures.append(f"debian/changelog's newest entry is {first!r}, not version {version}")

# CHANGELOG.md: the newest section is the version being made, "## <version>" with an optional note.
heading = next((line for line in (root / "CHANGELOG.md").read_text().splitlines() if line.startswith("## ")), "")
if not re.match(rf"^## {re.escape(version)}( |$)", heading):
    failures.append(f"CHANGELOG.md's newest section is {heading!r}, not '## {version}'")

for f in failures:
    print(f)
if failures:
    sys.exit(1)
print(f"version {version}: CMakeLists.txt, debian/changelog and CHANGELOG.md agree")
