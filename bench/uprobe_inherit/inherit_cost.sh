#!/bin/bash
# The cost of inherit_check.sh's "anchor" way for many sites (bench/RESULTS.md): 500 of libc's
# functions on an idle python3 with 1 and with 16 threads, closed from 1 and from 8 threads.
# Then the same 500 sites in one tracefs event (inherit_sites.c: one anchor, one filter).
# Needs root, clang, libbpf-dev. Usage: bench/uprobe_inherit/inherit_cost.sh
set -eu
src=$(cd "$(dirname "$0")" && pwd)
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cd "$dir"
clang -g -O2 -target bpf -I/usr/include/$(uname -m)-linux-gnu -c "$src/count.bpf.c" -o count.bpf.o
cc -O1 -pthread "$src/inherit_cost.c" -o inherit_cost -lbpf
clang -g -O2 -target bpf -D__TARGET_ARCH_x86 -I"$src/../../vmlinux" -c "$src/site.bpf.c" -o site.bpf.o
cc -O1 "$src/inherit_sites.c" -o inherit_sites -lbpf
readelf -Ws /usr/lib/x86_64-linux-gnu/libc.so.6 |
	awk '$4 == "FUNC" && $3 > 16 && $7 != "UND" {print $2}' | sort -u | head -500 >offsets
for threads in 1 16; do
	python3 -c "
import threading, time
for i in range($threads - 1):
    threading.Thread(target=time.sleep, args=(600,), daemon=True).start()
time.sleep(600)" &
	job=$!
	until [ "$(ls /proc/$job/task | wc -l)" -ge $threads ]; do sleep 0.05; done
	for closers in 1 8; do
		./inherit_cost $job 500 $closers <offsets
	done
	touch stop
	DIR=$dir ./inherit_sites $job /usr/lib/x86_64-linux-gnu/libc.so.6 <offsets | tail -1
	kill $job
	wait $job 2>/dev/null || true
done
# What the inherited events cost the job: a thread and a fork copy every event of their parent
# thread. job.c's T (1,000 threads in turn) and F (200 forks in turn) untraced, then with 1, 20
# and 100 events (a site each) on the job.
cc -O1 -pthread "$src/job.c" -o job
for events in 0 1 20 100; do
	rm -f go stop attached
	DIR=$dir ./job TF >job.out 2>job.err &
	job=$!
	until [ -s job.out ]; do sleep 0.05; done
	cost=
	if [ $events -gt 0 ]; then
		DIR=$dir ./inherit_cost $job $events 8 <offsets >cost.out &
		cost=$!
		until [ -e attached ]; do sleep 0.05; done
	fi
	touch go
	until grep -q done job.out; do sleep 0.05; done
	echo "$events events: $(tr '\n' ' ' <job.err)"
	touch stop
	[ -z "$cost" ] || wait $cost
	kill $job
	wait $job 2>/dev/null || true
done
