#!/bin/bash
# What telling page faults apart costs a cpu sample (bpf/cpu.bpf.c's kernel stack): the
# cpu_sample program's mean run time by the kernel's BPF stats, a recorder without it (BASE: a
# build of the commit before, e.g. `git archive 03a16f3 | tar -x -C /tmp/base && make -C
# /tmp/base build/bpfsight`) against this tree's, in turns, on tests/workloads/fault_steps.py
# (a fifth of its CPU in page faults) at --sample-rate 999. Root; sets
# kernel.bpf_stats_enabled for the run and puts it back. bench/RESULTS.md, "fault-bound".
#
#   bench/fault_sample_cost.sh BASE_BPFSIGHT [ROUNDS]
set -eu
BASE=$1
ROUNDS=${2:-3}
HERE=$(cd "$(dirname "$0")/.." && pwd)
NEW=$HERE/build/bpfsight
TMP=$(mktemp -d)
was=$(cat /proc/sys/kernel/bpf_stats_enabled)
trap 'echo $was > /proc/sys/kernel/bpf_stats_enabled; kill $JOB 2>/dev/null; rm -rf $TMP' EXIT
# A start whose step faults (about one in four does not: fault_steps.py).
for try in 1 2 3 4 5; do
	(sleep 100000 | /usr/bin/python3 "$HERE/tests/workloads/fault_steps.py" > "$TMP/job") &
	while ! [ -s "$TMP/job" ]; do sleep 0.5; done
	read -r _ JOB FAULTS < "$TMP/job"
	[ "$FAULTS" -gt 5000 ] && break
	kill "$JOB"
	: > "$TMP/job"
done
echo "job $JOB: $FAULTS page faults a step"
echo 1 > /proc/sys/kernel/bpf_stats_enabled
for round in $(seq "$ROUNDS"); do
	for b in "$BASE" "$NEW"; do
		"$b" record --force -o "$TMP/t.bst" -p "$JOB" -t cpu --sample-rate 999 -d 8s \
			> "$TMP/log" 2>&1 &
		rec=$!
		sleep 7
		stats=$(bpftool prog show name cpu_sample | head -1)
		wait $rec
		runs=$(echo "$stats" | sed -n 's/.*run_cnt \([0-9]*\).*/\1/p')
		ns=$(echo "$stats" | sed -n 's/.*run_time_ns \([0-9]*\).*/\1/p')
		kern=$("$b" dump "$TMP/t.bst" 2>/dev/null | grep -c '"cpu_sample","name":"kernel"' || true)
		faults=$("$b" dump "$TMP/t.bst" 2>/dev/null | grep -c '"page_fault":true' || true)
		echo "round $round $b: $runs runs, $((ns / runs)) ns a run; $kern kernel samples, $faults in faults"
	done
done
