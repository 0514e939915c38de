#!/bin/bash
# make deb: build the Debian package from a copy of the tree (tracked and new files, no build
# outputs) under OUTDIR, so dpkg-buildpackage neither cleans the developer's build/ nor writes
# into the parent directory. The package version says which commit it is:
# 0.0~gitYYYYMMDDHHMMSS.HASH[+dirty] (HEAD's commit time), the binary's --version the same hash.
#   tools/make_deb.sh OUTDIR          (VERSION=<git describe> in the environment)
set -euo pipefail
out=${1:?usage: make_deb.sh OUTDIR}
version=${VERSION:-$(git describe --always --dirty)}
stamp=$(git log -1 --format=%cd --date=format-local:%Y%m%d%H%M%S)
hash=$(git rev-parse --short HEAD)
debver="0.0~git$stamp.$hash"
case $version in *-dirty) debver="$debver+dirty" ;; esac

for tool in dpkg-buildpackage dh; do
	command -v $tool >/dev/null || { echo "make deb: no $tool: apt-get install dpkg-dev debhelper (make deps)" >&2; exit 1; }
done
rm -rf "$out"
src="$out/bpfsight-$debver"
mkdir -p "$src"
# (a tracked file deleted in the work tree is left out, as it would be from a commit)
git ls-files -z --cached --others --exclude-standard |
	while IFS= read -r -d '' f; do [ -e "$f" ] && printf '%s\0' "$f"; done |
	xargs -0 cp -P --parents -t "$src"
# The first changelog entry carries this build's version.
{
	printf 'bpfsight (%s) unstable; urgency=medium\n\n  * Built from %s (%s).\n\n -- %s  %s\n\n' \
		"$debver" "$hash" "$version" "bpfsight developers <bpfsight@example.org>" \
		"$(date -R -u)"
	cat debian/changelog
} > "$src/debian/changelog"
echo "  DEB      $out/bpfsight_${debver}_$(dpkg --print-architecture).deb"
(cd "$src" && BPFSIGHT_VERSION=$version dpkg-buildpackage -us -uc -b) > "$out/build.log" 2>&1 || {
	tail -30 "$out/build.log" >&2
	echo "make deb: dpkg-buildpackage failed: $out/build.log" >&2
	exit 1
}
ls "$out"/bpfsight_*.deb
