#!/bin/sh
# Installs Debian's chromium, the headless browser the reports package's
# HTML test (TestHTMLInChromium) loads report.html in, when it is missing.
# Run as root (make deps-test does; the test runs it itself when root).
set -eu
if command -v chromium >/dev/null 2>&1; then
	chromium --version 2>/dev/null || true
	exit 0
fi
if [ "$(id -u)" != 0 ]; then
	echo "chromium missing: run as root: apt-get install -y chromium fonts-liberation" >&2
	exit 1
fi
echo "chromium missing: installing it with apt-get"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq chromium fonts-liberation >/dev/null
chromium --version 2>/dev/null || true
