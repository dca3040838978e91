#!/usr/bin/env bash
# Chromium for the HTML reports' browser tests (`make report-test`), from Debian's archive.
#
# Nothing happens when a chromium is on PATH (or $CHROMIUM names one). Otherwise, on a
# Debian-family machine, Debian's `chromium` is installed with apt-get, as root: the script says
# what it installs before it does, and stops with a message when it is not root. Playwright's own
# browser download is never used; the tests launch this executable.
set -euo pipefail

say() { printf 'chromium: %s\n' "$*" >&2; }
fail() { printf 'chromium: error: %s\n' "$*" >&2; exit 1; }

if [[ -n "${CHROMIUM:-}" ]]; then
    [[ -x "$CHROMIUM" ]] || fail "CHROMIUM=$CHROMIUM is not an executable"
    say "using $CHROMIUM"
    exit 0
fi
if command -v chromium > /dev/null; then
    say "$(command -v chromium) is installed: nothing to do"
    exit 0
fi
command -v apt-get > /dev/null || fail "no chromium, and no apt-get to install Debian's"
[[ $(id -u) -eq 0 ]] || fail "installing chromium needs root: run 'sudo $0', or install it yourself"
say "installing chromium from Debian's archive (apt-get, as root)"
# Wait for another package install to finish instead of failing on dpkg's lock.
apt-get -o DPkg::Lock::Timeout=600 update -qq
DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq \
    --no-install-recommends chromium > /dev/null
command -v chromium > /dev/null || fail "apt-get installed chromium, but it is not on PATH"
say "$(command -v chromium) installed"
