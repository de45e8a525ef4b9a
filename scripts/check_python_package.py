"""An installed vkgmm Python package as its user meets it, run from outside the tree: imported from where
it was installed (below the given prefix), its __version__ the project's, and the README's Python example
run as written. scripts/check_pip_install.sh (a venv) and scripts/check_debs.sh (Debian's python3-vkgmm)
call it with the interpreter they installed into.
usage: python check_python_package.py <source tree> <installed under this prefix>"""
import os
import pathlib
import re
import sys

root, prefix = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
# The installed package, never the tree's: nothing of the source tree on the import path.
sys.path = [p for p in sys.path if p and not pathlib.Path(p).resolve().is_relative_to(root)]
if pathlib.Path.cwd().resolve().is_relative_to(root):
    sys.exit("run from outside the source tree")
sys.path.insert(0, str(root / "scripts"))
from project_version import project_version  # noqa: E402

sys.path.pop(0)
import vkgmm  # noqa: E402

where = pathlib.Path(vkgmm.__file__).resolve()
assert where.is_relative_to(prefix.resolve()), f"imported {where}, not from below {prefix}"
assert vkgmm.__version__ == project_version(root), (vkgmm.__version__, project_version(root))
readme = (root / "README.md").read_text()
code = re.search(r"```python\n(.*?)```", readme[readme.index("\n## Python\n"):], re.S).group(1)
exec(compile(code, os.fspath(root / "README.md"), "exec"), {})
print("installed vkgmm", vkgmm.__version__, "at", where)
