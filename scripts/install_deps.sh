#!/usr/bin/env bash
# Installs what Orochi builds against: Debian packages (skipping those already there) and, when
# the CUDA toolkit is present, the cudnn-frontend headers from their PyPI wheel into
# build deps (never into the repo).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
packages=(cmake ninja-build g++ pkg-config libgtest-dev nlohmann-json3-dev libcpp-httplib-dev
          libavformat-dev libavcodec-dev libavutil-dev libswscale-dev libswresample-dev ffmpeg)
missing=()
for p in "${packages[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "[orochi] installing: ${missing[*]}"
  sudo_cmd=""
  [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# cudnn-frontend: header-only C++ API over cuDNN's graph backend (attention), shipped on PyPI.
cfe_version=1.32.0
cfe_dir="$root/.deps/cudnn_frontend-$cfe_version"
if { command -v nvcc >/dev/null 2>&1 || [ -x /usr/local/cuda/bin/nvcc ]; } && [ ! -f "$cfe_dir/include/cudnn_frontend.h" ]; then
  echo "[orochi] fetching cudnn-frontend $cfe_version headers"
  tmp="$(mktemp -d)"
  python3 -m pip download -q --no-deps -d "$tmp" "nvidia-cudnn-frontend==$cfe_version"
  mkdir -p "$cfe_dir"
  python3 -c "import sys, zipfile; z = zipfile.ZipFile(sys.argv[1]); [z.extract(n, sys.argv[2]) for n in z.namelist() if n.startswith('include/')]" "$tmp"/*.whl "$cfe_dir"
  rm -rf "$tmp"
fi
