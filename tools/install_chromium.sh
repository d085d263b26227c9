#!/usr/bin/env bash
# Debian's Chromium, for the browser test (tests/test_browser.py drives JupyterLab with it
# through Playwright; Playwright's own browser downloads are never used).
# Nothing to do when /usr/bin/chromium is there. Otherwise apt installs it, as root or
# through sudo. Where that is not possible this says what to do and exits 0, so the rest of
# the test command still runs; the browser test then fails with the same advice.
set -euo pipefail
packages=(chromium fonts-dejavu-core)
if [ -x /usr/bin/chromium ]; then
    exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
    echo "install_chromium.sh: no apt-get on this machine: install Chromium yourself and set" \
         "SIMTLAB_CHROMIUM=/path/to/chromium for the browser test" >&2
    exit 0
fi
if [ "$(id -u)" -eq 0 ]; then
    as_root=()
elif command -v sudo >/dev/null 2>&1; then
    as_root=(sudo)
else
    echo "install_chromium.sh: not root and no sudo: run 'apt-get install -y ${packages[*]}' as root" \
         "for the browser test" >&2
    exit 0
fi
export DEBIAN_FRONTEND=noninteractive
echo "install_chromium.sh: apt-get install ${packages[*]} (the browser test's browser)"
if ! "${as_root[@]}" apt-get install -y -q "${packages[@]}"; then
    "${as_root[@]}" apt-get update -q        # a fresh machine may have no package lists yet
    "${as_root[@]}" apt-get install -y -q "${packages[@]}"
fi
