#!/bin/bash
# Issue 82 item 3's experiment (bench/RESULTS.md, "A -p target's children from their first
# instruction"): for each way of opening a uprobe for one process with perf's inherit, a traced
# job and an untraced twin run the same calls of libc's getppid(); prints what the BPF program
# counted per process against what was called, and whether the twin's getppid holds an int3.
# Needs root, clang, libbpf-dev. Usage: bench/uprobe_inherit/inherit_check.sh
set -eu
src=$(cd "$(dirname "$0")" && pwd)
export DIR=$(mktemp -d)
trap 'rm -rf "$DIR"' EXIT
cd "$DIR"
clang -g -O2 -target bpf -I/usr/include/$(uname -m)-linux-gnu -c "$src/count.bpf.c" -o count.bpf.o
cc -O1 -pthread "$src/job.c" -o job
cc -O1 "$src/inherit_check.c" -o inherit_check -lbpf
clang -g -O2 -target bpf -D__TARGET_ARCH_x86 -I"$src/../../vmlinux" -c "$src/site.bpf.c" -o site.bpf.o
cc -O1 "$src/inherit_sites.c" -o inherit_sites -lbpf
libc=$(readlink -f /lib/$(uname -m)-linux-gnu/libc.so.6)
sym() { readelf -Ws "$libc" | awk -v s="^$1@@" '$8 ~ s {print "0x" $2; exit}'; }
off=$(sym getppid)
# The first byte of getppid in PID's memory (0xcc: an int3 is there).
byte() {
	python3 - "$1" "$libc" "$off" <<'PY'
import sys
pid, lib, off = sys.argv[1], sys.argv[2], int(sys.argv[3], 16)
for l in open(f"/proc/{pid}/maps"):
    f = l.split()
    if len(f) > 5 and f[5] == lib and int(f[2], 16) == 0:
        m = open(f"/proc/{pid}/mem", "rb")
        m.seek(int(f[0].split("-")[0], 16) + off)
        print(hex(m.read(1)[0]))
        break
PY
}
# case MODE SEQ [early] [ret]: what was counted per process.
case_() {
	local mode=$1 seq=$2 early=${3:-} ret=${4:-}
	rm -f go stop attached
	./job "$seq" $early >twin.out 2>twin.err &
	local twin=$!
	./job "$seq" $early >job.out 2>job.err &
	local job=$!
	until [ -s twin.out ] && [ -s job.out ]; do sleep 0.05; done
	if [ "$mode" = sites ]; then
		printf "%s\n%s\n" "$off" "$(sym getuid)" | ./inherit_sites "$job" "$libc" >check.out &
	else
		./inherit_check "$mode" "$job" "$libc" "$off" $ret >check.out &
	fi
	local check=$!
	until [ -e attached ] || ! kill -0 $check 2>/dev/null; do sleep 0.05; done
	echo "== $mode, job '$seq'${early:+ + a thread from before the attach forking a child}${ret:+ (return probe)}"
	echo "   job $job: int3 at getppid: $(byte $job); twin $(head -1 twin.out): $(byte $(head -1 twin.out))"
	touch go
	until grep -q done job.out && grep -q done twin.out; do sleep 0.05; done
	echo "   twin after its run: $(byte $(head -1 twin.out))"
	touch stop
	wait $check || true
	sed 's/^/   counted: /' check.out
	sed 's/^/   job said: /' job.err
	kill $job $twin
	wait $job $twin 2>/dev/null || true
}
echo "called: m 10 by the job, t 100 by a thread, f 1000 by a forked child, e 500 by an exec'd child,"
echo "g 7 by a grandchild, u 200 getuid() by a child; early: 1000 by a child of a thread that was"
echo "there before the attach. sites: getppid and getuid (offsets $off, $(sym getuid)) in one event;"
echo "libc's inode $(stat -L -c %i "$libc")"
case_ pmu mft
case_ tracefs fsm
case_ tracefs fm
case_ anchor fsmtsegsm
case_ anchor fsmtsegsm "" ret
case_ anchor m early
case_ threads m early
case_ sites mfsmu
echo "== the price of a call: untraced (the twin), a uprobe_multi link (multi), the anchor (the"
echo "   cookie), one event for many sites (sites: func_ip + find_vma); 3 rounds, taking turns"
for i in 1 2 3; do
	for m in multi anchor sites; do
		case_ $m M >/dev/null
		echo "   untraced $(cat twin.err), $m $(cat job.err)"
	done
done
