#!/bin/sh
# Inside a check-kernels VM, chrooted into the host's root (tests/kernels/init.sh): the kernel's
# feature probes, then each family's end-to-end tests against the host's build, each test
# file's log in the results share for check_kernels.py to read.
#   guest.sh OUT BUILD TIMEOUT NAME=PATTERN[,PATTERN][@VAR=VALUE]...
# (-k PATTERNs of tests/run_tests.py; VAR=VALUE in their environment, e.g. forced fallbacks)
out=$1 build=$2 limit=$3
shift 3
cd "$(dirname "$0")/../.." || exit 1
uname -r >"$out/uname"
# Page the build in once: a workload's first exec would otherwise block on 9p reads, which
# the sched tests see as extra blocked intervals woken by an interrupt.
find "$build/bpfsight" "$build/tests" "$build/bench" -maxdepth 2 -type f -size -20M \
	-exec cat {} + >/dev/null 2>&1
"$build/bpfsight" record --features >"$out/features" 2>&1
for spec in "$@"; do
	fam=${spec%%=*} pats=${spec#*=} env=
	case $pats in *@*) env=${pats#*@} pats=${pats%%@*} ;; esac
	for pat in $(echo "$pats" | tr , ' '); do
		echo "== $fam: -k $pat" >/dev/console
		t0=$(cut -d. -f1 /proc/uptime)
		env $env timeout "$limit" python3 tests/run_tests.py --build "$build" -j 1 --no-unit --no-fuzz \
			-k "$pat" >>"$out/$fam.log" 2>&1
		rc=$?
		echo "# rc $rc after $(($(cut -d. -f1 /proc/uptime) - t0)) s: -k $pat" >>"$out/$fam.log"
		grep -E '^[0-9]+ passed' "$out/$fam.log" | tail -1 >/dev/console
	done
done
