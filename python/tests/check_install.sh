#!/usr/bin/env bash
# The installed Python package as a user sees it: `cmake --install` into a scratch prefix, then, from a
# directory away from the build tree, `import vkgmm` with PYTHONPATH set to where the package went (the
# interpreter's site-packages, relative to the prefix) and one gmm checked against numpy, validation on.
# usage: check_install.sh <cmake> <build dir> <python3> <install dir of the package, relative to the prefix>
set -euo pipefail
cmake=$1 build=$2 python=$3 site=$4
work=$(mktemp -d "${TMPDIR:-/tmp}/vkgmm-python-install.XXXXXX")
trap 'rm -rf "$work"' EXIT
"$cmake" --install "$build" --prefix "$work/prefix" >"$work/install.log"
pkg=$work/prefix/$site/vkgmm
for f in __init__.py __init__.pyi py.typed _ops.py; do
  [ -e "$pkg/$f" ] || { echo "missing: $site/vkgmm/$f"; ls -R "$work/prefix"; exit 1; }
done
ls "$pkg"/_vkgmm*.so >/dev/null || { echo "missing: the extension module in $pkg"; exit 1; }
cd "$work"
PYTHONPATH=$work/prefix/$site "$python" - "$pkg" <<'PY'
import os, sys
import numpy as np
import vkgmm
assert os.path.dirname(vkgmm.__file__) == sys.argv[1], vkgmm.__file__
c = vkgmm.Context(validate=True)
rng = np.random.default_rng(0)
lhs = rng.standard_normal((64, 32)).astype(np.float32)
rhs = rng.standard_normal((3, 32, 16)).astype(np.float32)
gs = np.array([20, 0, 40])
out = vkgmm.gmm(lhs, rhs, gs, context=c)
want = np.zeros((64, 16))
want[:20] = lhs[:20] @ rhs[0]
want[20:60] = lhs[20:60] @ rhs[2]
np.testing.assert_allclose(out, want, atol=1e-3, rtol=1e-5)
assert c.take_validation_messages() == []
print("installed vkgmm:", vkgmm.__file__, "on", c.info["name"])
PY
