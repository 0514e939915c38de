#!/bin/bash
# make check-deb: the Debian package from `make deb`, installed into a clean Debian 12 root
# with `apt install ./bpfsight_*.deb` and run there: --version, a recording, stats, report, the man
# page and completion files, `bpfsight shim` finding the installed shim; then removed.
# The root is made once by debootstrap from Debian's mirror and cached (ROOT_CACHE); each
# run works on an overlay of it, so the cache stays clean.
#   tests/deb/check_deb.sh DEBDIR       (as root)
set -euo pipefail
debdir=${1:?usage: check_deb.sh DEBDIR}
cache=${ROOT_CACHE:-/var/cache/bpfsight/debian12-root}
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
deb=$(ls "$debdir"/bpfsight_*.deb 2>/dev/null | grep -v dbgsym | head -1)
[ -n "$deb" ] || { echo "check-deb: no bpfsight_*.deb in $debdir (make deb)" >&2; exit 1; }
[ "$(id -u)" = 0 ] || { echo "check-deb: needs root (chroot, mounts, BPF)" >&2; exit 1; }

step() { printf '  %-8s %s\n' CHECK "$*"; }
fail() { echo "check-deb: FAILED: $*" >&2; exit 1; }

if [ ! -e "$cache/.bpfsight-root-complete" ]; then
	command -v debootstrap >/dev/null || fail "no debootstrap: apt-get install debootstrap (make deps)"
	step "debootstrap bookworm into $cache (once)"
	rm -rf "$cache.tmp"
	mkdir -p "$(dirname "$cache")"
	debootstrap --variant=minbase bookworm "$cache.tmp" "$mirror" > "$cache.log" 2>&1 ||
		fail "debootstrap failed: $cache.log"
	touch "$cache.tmp/.bpfsight-root-complete"
	mv "$cache.tmp" "$cache"
fi

lintian_out=$(lintian "$deb" 2>&1 | grep -v 'running with root privileges' || true)
if grep -q '^E:' <<<"$lintian_out"; then
	fail "lintian errors: $lintian_out"
fi
step "lintian: no errors${lintian_out:+ (
$lintian_out)}"

work=$(mktemp -d /tmp/bpfsight-check-deb.XXXXXX)
root=$work/root
mounts=()
cleanup() {
	for ((i = ${#mounts[@]} - 1; i >= 0; i--)); do umount -l "${mounts[i]}" 2>/dev/null || true; done
	rm -rf "$work"
}
trap cleanup EXIT
mkdir -p "$work/upper" "$work/work" "$root"
mount -t overlay overlay -o "lowerdir=$cache,upperdir=$work/upper,workdir=$work/work" "$root"
mounts+=("$root")
mount -t proc proc "$root/proc" && mounts+=("$root/proc")
# rslave: unmounting the copies must never propagate back to the host's /sys and /dev.
mount --rbind /sys "$root/sys" && mount --make-rslave "$root/sys" && mounts+=("$root/sys")
mount --rbind /dev "$root/dev" && mount --make-rslave "$root/dev" && mounts+=("$root/dev")
in_root() { chroot "$root" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LC_ALL=C.UTF-8 "$@"; }

cp "$deb" "$root/tmp/"
step "apt install ./$(basename "$deb") (no network needed: it depends on libc6 only)"
in_root sh -c "cd /tmp && apt-get install -y ./$(basename "$deb")" > "$work/apt.log" 2>&1 ||
	fail "apt install: $(tail -5 "$work/apt.log")"

want=$(dpkg-deb -f "$deb" Version)
got=$(in_root bpfsight --version)
step "bpfsight --version: $got (package $want)"
[[ $got == "bpfsight "* ]] || fail "--version printed '$got'"
case $want in *"$(sed 's/^bpfsight \([0-9a-f]*\).*/\1/' <<<"$got")"*) ;;
*) fail "--version '$got' is not of package $want" ;; esac

step "record -t osrt -- /bin/true, in the root"
in_root bpfsight record -t osrt -o /tmp/t.bst -- /bin/true > "$work/rec.log" 2>&1 ||
	fail "record: $(cat "$work/rec.log")"
stats=$(in_root bpfsight stats -r osrt_sum --format csv /tmp/t.bst) || fail "stats"
# The count column of NAME's row in the CSV (columns found by the header's names).
count_of() {
	awk -F, -v want="$1" 'NR == 2 { for (i = 1; i <= NF; i++) col[$i] = i }
		NR > 2 && $col["name"] == want { print $col["count"] }' <<<"$stats"
}
# /bin/true, exec'd once, maps its libraries (dynamically linked) before it exits.
[ "$(count_of execve)" = 1 ] || fail "stats: execve count '$(count_of execve)', not 1: $stats"
[ "$(count_of mmap)" -gt 0 ] 2>/dev/null || fail "stats: no mmap in osrt_sum: $stats"
step "stats -r osrt_sum: execve 1, mmap $(count_of mmap), $(($(wc -l <<<"$stats") - 2)) syscalls"
info=$(in_root bpfsight info /tmp/t.bst) || fail "info"
grep -q '^clean close: *yes' <<<"$info" || fail "info: not closed cleanly: $info"

in_root bpfsight report /tmp/t.bst -o /tmp/t.html > "$work/report.log" 2>&1 ||
	fail "report: $(cat "$work/report.log")"
grep -q '<figure class="timeline" id="tl-syscall">' "$root/tmp/t.html" ||
	fail "report: no system call timeline in /tmp/t.html"
step "report -o /tmp/t.html: $(wc -c < "$root/tmp/t.html") bytes, with its system call timeline"

for f in /usr/share/man/man1/bpfsight.1.gz /usr/share/man/man1/bpfsight-record.1.gz \
	/usr/share/bash-completion/completions/bpfsight /usr/share/zsh/vendor-completions/_bpfsight \
	/usr/share/doc/bpfsight/USAGE.md.gz /usr/share/doc/bpfsight/copyright; do
	[ -f "$root$f" ] || fail "not installed: $f"
done
step "man pages, completions, docs installed"
if [ -f "$root/usr/lib/bpfsight/libbpfsight-shim.so" ]; then
	env=$(in_root bpfsight shim --print-env) || fail "bpfsight shim"
	[ "$env" = "export CUDA_INJECTION64_PATH=/usr/lib/bpfsight/libbpfsight-shim.so
export NVTX_INJECTION64_PATH=/usr/lib/bpfsight/libbpfsight-shim.so" ] ||
		fail "bpfsight shim: $env"
	step "bpfsight shim finds /usr/lib/bpfsight/libbpfsight-shim.so"
fi

step "apt remove bpfsight"
in_root apt-get remove -y --purge bpfsight > "$work/remove.log" 2>&1 || fail "apt remove"
left=$(cd "$root" && ls -d usr/bin/bpfsight usr/lib/bpfsight usr/share/doc/bpfsight \
	usr/share/man/man1/bpfsight* usr/share/bash-completion/completions/bpfsight 2>/dev/null || true)
[ -z "$left" ] || fail "left after removal: $left"
in_root dpkg -s bpfsight > /dev/null 2>&1 && fail "dpkg still knows bpfsight"
echo "check-deb: OK ($(basename "$deb") in a clean Debian 12 root)"
