#!/bin/bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# Installs chDB, ClickHouse embedded as a library, for the tests that run bpfsight's SQL on a
# current ClickHouse release (docs/CLICKHOUSE.md, "Versions tested"): Debian 12 packages only
# clickhouse-server 18.16, and no ClickHouse server of this decade can be downloaded here, but
# npm serves chDB's Node package, whose libchdb.so is the whole engine (ClickHouse 26.7) behind a
# C API. tests/e2e/chdb_server.py serves ClickHouse's HTTP interface from it.
#
# The package is fetched by npm at a pinned version and checked against its pinned integrity
# hash (sha512 of the tarball, npm's own `integrity`) before anything is unpacked: a 178 MB
# tarball, 566 MB unpacked (libchdb.so). Only DEST/VERSION/libchdb.so is kept.
#
# Usage: install_chdb.sh [DEST]     (default /opt/chdb)
set -euo pipefail

PKG=@chdb/lib-linux-x64-gnu
VERSION=26.7.3-stable.1
INTEGRITY=sha512-XP97mMqnc5tZpKQywR8N7cLTsHNiTmHr30pC5mzo3jWmukjKn2IBa60c2B/gWUNcuFjOMjWoorQICCqBVj5wpw==
DEST=${1:-/opt/chdb}

if [ -f "$DEST/$VERSION/libchdb.so" ]; then
	echo "deps: chDB $VERSION in $DEST/$VERSION"
	exit 0
fi
command -v npm >/dev/null || { echo "install_chdb: npm not found (apt-get install npm)" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
(cd "$work" && npm pack --silent "$PKG@$VERSION" >/dev/null)
tgz=$(ls "$work"/*.tgz)
got="sha512-$(openssl dgst -sha512 -binary "$tgz" | base64 -w0)"
if [ "$got" != "$INTEGRITY" ]; then
	echo "install_chdb: $PKG@$VERSION's tarball is not the one pinned:" >&2
	echo "  expected $INTEGRITY" >&2
	echo "  got      $got" >&2
	exit 1
fi
tar -xzf "$tgz" -C "$work" package/libchdb.so
mkdir -p "$DEST/$VERSION"
mv "$work/package/libchdb.so" "$DEST/$VERSION/libchdb.so.tmp"
mv "$DEST/$VERSION/libchdb.so.tmp" "$DEST/$VERSION/libchdb.so"
echo "deps: chDB $VERSION in $DEST/$VERSION ($(du -h "$tgz" | cut -f1) fetched)"
