#!/usr/bin/env bash
# Builds our ROS 2 interface package (src/afford_interfaces: msg/srv/action via rosidl) from
# the PyPI ROS 2 Kilted wheels, without a system ROS install, and installs it into the venv:
#   $VENV/lib/python3.X/site-packages/afford_interfaces   the generated Python package
#   $VENV/lib/libafford_interfaces__*.so                   C/C++ type support libraries
#   $VENV/share/afford_interfaces/                         package.xml, .msg/.idl, cmake config
#   $VENV/share/ament_index/resource_index/packages/afford_interfaces   the ament index marker
# Run after scripts/setup.sh. Safe to re-run: pip, cmake and the path rewrite only do work
# when something changed. Needs cmake and a C/C++ compiler (Debian: cmake g++) and the
# headers of the Python the venv was made from (pyenv's Pythons carry them).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${AFFORD_VENV:-$ROOT/.venv}"
PKG_DIR="$ROOT/src/afford_interfaces"
BUILD_DIR="$ROOT/build/afford_interfaces"
cd "$ROOT"

log() { printf '\033[1m[interfaces]\033[0m %s\n' "$*"; }
die() { printf '\033[1;31m[interfaces]\033[0m %s\n' "$*" >&2; exit 1; }
# Same filter as setup.sh: drop pip's warnings about configured local folders that don't exist.
quiet_pip() { "$VENV/bin/python" -m pip "$@" 2>&1 | { grep -v "^WARNING: Location 'file:" || true; }; }

start=$SECONDS
[ -x "$VENV/bin/python" ] || die "no venv at $VENV: run scripts/setup.sh first"
command -v cmake >/dev/null || die "cmake not found (Debian: apt-get install cmake)"
command -v c++ >/dev/null || command -v g++ >/dev/null || die "no C++ compiler (Debian: apt-get install g++)"

# 1. The build-time wheels (ament_cmake, rosidl generators), pinned to the installed Kilted set.
log "installing build wheels from requirements-ros-build.txt"
quiet_pip install -q -r requirements-ros-build.txt

# 2. The Kilted message wheels are built in a manylinux image, and each one's
#    export_<pkg>__rosidl_generator_pyExport.cmake hard-codes that image's Python and numpy
#    include directories (/opt/python/cp312-cp312/...) into an imported target. CMake refuses
#    to generate when an imported target names a directory that does not exist, and ours
#    depends on those targets (std_msgs, geometry_msgs, action_msgs, ...). Point them at this
#    venv's Python headers and numpy instead. Only .cmake files under $VENV/share are touched;
#    a re-install of a message wheel brings the old path back, which the next run rewrites.
PY_INCLUDE="$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["include"])')"
NUMPY_INCLUDE="$("$VENV/bin/python" -c 'import numpy; print(numpy.get_include())')"
[ -f "$PY_INCLUDE/Python.h" ] \
  || die "Python headers missing in $PY_INCLUDE (make the venv from a Python that has them)"
PY_VER="$("$VENV/bin/python" -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")')"
WHEEL_PREFIX="/opt/python/cp${PY_VER/./}-cp${PY_VER/./}"
mapfile -t stale < <(grep -rlF --include='*.cmake' "$WHEEL_PREFIX/" "$VENV/share" || true)
if [ ${#stale[@]} -gt 0 ]; then
  log "pointing ${#stale[@]} wheel cmake files at $PY_INCLUDE and $NUMPY_INCLUDE"
  sed -i \
    -e "s#$WHEEL_PREFIX/lib/python$PY_VER/site-packages/numpy/_core/include#$NUMPY_INCLUDE#g" \
    -e "s#$WHEEL_PREFIX/include/python$PY_VER#$PY_INCLUDE#g" \
    "${stale[@]}"
  if left="$(grep -rlF --include='*.cmake' "$WHEEL_PREFIX/" "$VENV/share")"; then
    die "unexpected $WHEEL_PREFIX paths remain after the rewrite in: $left"
  fi
fi

# 3. Configure, build and install with the venv as the install prefix. rosidl discovers its
#    type support generators through the ament index, hence AMENT_PREFIX_PATH.
export AMENT_PREFIX_PATH="$VENV${AMENT_PREFIX_PATH:+:$AMENT_PREFIX_PATH}"
export PATH="$VENV/bin:$PATH"
# A cache from another checkout, venv or Python (a venv remade at the same path with another
# version keeps the old site-packages path in the cache) would build against the wrong paths:
# start over.
cache="$BUILD_DIR/CMakeCache.txt"
stamp="$BUILD_DIR/.afford-python"
if [ -f "$cache" ] && ! { grep -qxF "CMAKE_HOME_DIRECTORY:INTERNAL=$PKG_DIR" "$cache" \
    && grep -qxF "CMAKE_INSTALL_PREFIX:PATH=$VENV" "$cache" \
    && [ "$(cat "$stamp" 2>/dev/null)" = "$PY_VER" ]; }; then
  log "build cache belongs to another checkout, venv or Python; removing $BUILD_DIR"
  rm -rf "$BUILD_DIR"
fi
log "configuring in ${BUILD_DIR#"$ROOT"/}"
cmake -S "$PKG_DIR" -B "$BUILD_DIR" --log-level=WARNING \
  -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_INSTALL_PREFIX="$VENV" \
  -DCMAKE_PREFIX_PATH="$VENV" \
  -DPython3_EXECUTABLE="$VENV/bin/python" \
  -DBUILD_TESTING=OFF >/dev/null
echo "$PY_VER" > "$stamp"
log "building"
cmake --build "$BUILD_DIR" -j "$(nproc)" >/dev/null
log "installing into $VENV"
cmake --install "$BUILD_DIR" >/dev/null

# 4. Prove the result is usable the way the nodes use it: importable, and in the ament index.
"$VENV/bin/python" - <<'EOF'
from ament_index_python.packages import get_package_share_directory

import afford_interfaces.action
import afford_interfaces.msg
import afford_interfaces.srv  # noqa: F401

get_package_share_directory("afford_interfaces")
EOF
log "afford_interfaces ready ($((SECONDS - start)) s)"
