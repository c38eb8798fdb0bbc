#!/bin/sh
# Installs the Makefile's PKGS_BROWSER (Debian's chromium and
# fonts-liberation), the headless browser the reports package's HTML test
# (TestHTMLInChromium) loads report.html in, when missing, with
# testdata/install-packages.sh. Run as root (make deps-test has installed
# it already; the test runs this itself when root).
set -eu
sh "$(dirname "$0")/../../testdata/install-packages.sh" PKGS_BROWSER
chromium --version 2>/dev/null || true
