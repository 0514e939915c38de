#!/bin/sh
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# docs/report.png (README's picture): `bpfsight report` of a real trace, rendered by headless
# chromium at a laptop's width from the page's top: the verdict, the headline figures, then
# the timelines on their one axis (steps and ranges, the threads' lanes). Usage: tests/tools/report_png.sh [TRACE [PNG]]; `make report-png` runs it.
# Default TRACE: ../shared/traces/gpt2-gil-bound.bst (an H100 training step starved by a
# Python thread holding the GIL, recorded with -t cuda,gpu,nvtx,gil,osrt,sched,cpu).
set -eu
BPFSIGHT=${BPFSIGHT:-build/bpfsight}
TRACE=${1:-../shared/traces/gpt2-gil-bound.bst}
PNG=${2:-docs/report.png}
CHROMIUM=$(command -v chromium || command -v chromium-browser) || {
	echo "report_png.sh: no chromium (apt-get install chromium; make deps)" >&2
	exit 1
}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$BPFSIGHT" report "$TRACE" -o "$tmp/page.html"
# The page in a frame (as README's picture has always been taken), from its top.
printf '<!DOCTYPE html><body style="margin:0"><iframe src="page.html" %s></iframe>' \
	'style="border:0;width:1280px;height:2100px;display:block"' >"$tmp/shot.html"
"$CHROMIUM" --headless --no-sandbox --disable-gpu --no-first-run --hide-scrollbars \
	--user-data-dir="$tmp/profile" --window-size=1280,2100 --screenshot="$tmp/shot.png" \
	"file://$tmp/shot.html" 2>/dev/null
mv "$tmp/shot.png" "$PNG"
echo "report_png.sh: wrote $PNG from $TRACE"
