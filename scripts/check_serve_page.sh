#!/usr/bin/env bash
# The headless-browser check of orochi serve's page (scripts/check_serve_page.py): installs Debian's
# Chromium when it is missing (about 20 s here; CI runs this), then drives the page on the demo model.
# Screenshots go to ${TMPDIR:-/tmp}, never into the repo.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
if ! command -v chromium >/dev/null 2>&1; then
  echo "[orochi] installing chromium for the page check"
  sudo_cmd=""
  [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends chromium >/dev/null
fi
exec python3 "$root/scripts/check_serve_page.py" --orochi "${OROCHI_BINARY:-$root/build/orochi}" "$@"
