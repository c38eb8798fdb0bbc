#!/bin/sh
# The one installer of Debian packages for the Makefile and the test scripts.
#
#   install-packages.sh NAME...
#
# Each NAME is a Debian package or the name of one of the Makefile's PKGS_*
# variables (PKGS_RUN, PKGS_DOCKER, ...: the Makefile is the one place
# that lists what the project needs; a variable is read from it here, so a
# script run alone installs exactly what `make deps-test` would). Packages
# already installed (dpkg status "install ok installed") are left alone;
# the missing ones are installed with one `apt-get update` and one
# noninteractive `apt-get install -y`. Prints "installing: …" and then
# "installed: …" on stderr when it installed something, nothing when all
# were present. Exits 0 when everything is installed; 1 when something is
# missing and this is not root, or apt-get failed (its output on stderr).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
makefile=$(cd "$here/.." && pwd)/Makefile

resolve() { # prints the packages NAME stands for (one variable level deep)
	case "$1" in
	PKGS_*)
		line=$(sed -n "s/^$1[[:space:]]*:=[[:space:]]*//p" "$makefile")
		if [ -z "$line" ]; then
			echo "install-packages.sh: $1 is not a variable of $makefile (PKGS_NAME := pkg ...)" >&2
			exit 2
		fi
		for w in $line; do
			case "$w" in
			'$('*) resolve "$(echo "$w" | sed 's/^\$(\(.*\))$/\1/')" ;;
			*) echo "$w" ;;
			esac
		done
		;;
	*) echo "$1" ;;
	esac
}

[ $# -gt 0 ] || { echo "usage: $0 PKGS_VAR|package..." >&2; exit 2; }
want=
for n in "$@"; do want="$want $(resolve "$n")"; done
missing=
for p in $want; do
	case " $missing " in *" $p "*) continue ;; esac
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
		missing="$missing $p"
	fi
done
missing=${missing# }
[ -n "$missing" ] || exit 0

if [ "$(id -u)" != 0 ]; then
	echo "missing Debian packages: $missing; installing them needs root: run make deps-test (or this script) as root" >&2
	exit 1
fi
echo "installing:$( printf ' %s' $missing ) (apt-get)" >&2
export DEBIAN_FRONTEND=noninteractive
log=$(mktemp)
trap 'rm -f "$log"' EXIT
# shellcheck disable=SC2086 # $missing is a list of words
if ! { apt-get update -qq && apt-get install -y -qq $missing; } >"$log" 2>&1; then
	cat "$log" >&2
	echo "install-packages.sh: apt-get failed for: $missing" >&2
	exit 1
fi
echo "installed: $missing" >&2
