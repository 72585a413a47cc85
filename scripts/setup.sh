#!/usr/bin/env bash
# Installs everything the stack needs on a fresh Debian 12 machine: Debian packages,
# a Python 3.11 virtual environment in .venv with pinned versions, and our packages.
# Safe to re-run: each step checks what is already there.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${AFFORD_VENV:-$ROOT/.venv}"
PY="${AFFORD_PYTHON:-python3.11}"
cd "$ROOT"

log() { printf '\033[1m[setup]\033[0m %s\n' "$*"; }
# Some machines' pip configuration names local package folders that may not exist; pip warns
# about each one on every lookup. Drop that noise, keep everything else (pipefail keeps errors).
quiet_pip() { "$VENV/bin/python" -m pip "$@" 2>&1 | { grep -v "^WARNING: Location 'file:" || true; }; }

# 1. Debian packages: EGL/OSMesa for offscreen MuJoCo rendering, libusb for open3d and
#    pyrealsense2, a compiler and cmake for the interface package.
APT_PKGS=(libegl1 libgl1 libosmesa6 libglu1-mesa libusb-1.0-0 cmake g++ git chromium)
missing=()
for p in "${APT_PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  log "installing Debian packages: ${missing[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# 2. The virtual environment.
if [ ! -x "$VENV/bin/python" ]; then
  log "creating $VENV with $PY"
  "$PY" -m venv "$VENV"
fi
# The stock pip 23 backtracks for a very long time on this dependency set; pip 26 does not.
if ! "$VENV/bin/python" -m pip --version | grep -qE '^pip 2[6-9]'; then
  quiet_pip install -q -U "pip>=26,<27"
fi

# 3. Pinned dependencies (requirements.txt is the single list), then our packages.
stamp="$VENV/.afford-requirements.sha"
want="$(sha256sum requirements.txt | cut -d' ' -f1)"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  log "installing pinned dependencies (first run downloads several GB)"
  quiet_pip install -q -r requirements.txt
  echo "$want" > "$stamp"
fi

log "installing afford packages"
PKGS=()
for d in src/afford_*; do [ -f "$d/setup.py" ] && PKGS+=("$d"); done
# Editable, so a checkout's changes take effect without re-running set-up. --no-deps because
# every dependency is pinned above.
EDITABLE=()
for d in "${PKGS[@]}"; do EDITABLE+=(-e "$d"); done
# setuptools warns at length about editable installs; keep its errors, drop the banner.
PYTHONWARNINGS=ignore quiet_pip install -q --no-deps --no-build-isolation "${EDITABLE[@]}" \
  | { grep -vE 'BuildBackendWarning|^\s*(!!|\*+|Please be careful|name as your package|with strategy|)$' || true; }
# Editable installs skip data_files, so register each package in the ament index by hand:
# ament_index_python (and ros2 tools) find a package by this marker under $VENV/share.
for d in "${PKGS[@]}"; do
  name="$(basename "$d")"
  install -D -m 644 "$d/resource/$name" "$VENV/share/ament_index/resource_index/packages/$name"
  install -D -m 644 "$d/package.xml" "$VENV/share/$name/package.xml"
done

log "done. Activate with: source $VENV/bin/activate"
