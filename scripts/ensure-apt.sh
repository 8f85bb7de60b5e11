#!/usr/bin/env bash
# Install the Debian packages named on the command line that are not installed yet.
# Does nothing when all are present; uses sudo when not root; on a system without
# dpkg it says which packages the project expects and carries on.
set -euo pipefail
missing=()
if ! command -v dpkg-query >/dev/null 2>&1; then
    [ "$#" -gt 0 ] && echo "ensure-apt: not a Debian system; make sure these are installed: $*" >&2
    exit 0
fi
for pkg in "$@"; do
    if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
        missing+=("$pkg")
    fi
done
[ "${#missing[@]}" -eq 0 ] && exit 0
sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
echo "ensure-apt: installing ${missing[*]}" >&2
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
