#!/usr/bin/env bash
# demangle_v0.sh - every Rust v0 name (_R...) of a program built with
# -C symbol-mangling-version=v0 demangles as binutils' c++filt prints it.
#
# Usage: tests/runtime/demangle_v0.sh DEMANGLE_NAMES WORKDIR
#
# tests/preload/rust_sync.rs is built with Debian's rustc (/usr/bin/rustc) and,
# where there is one, with the rustc first on PATH (a newer one's standard
# library is itself in v0: hundreds more names, closures, shims, dyn
# types, constants); each _R symbol nm lists goes through ctrace__demangle
# (demangle_names) and c++filt, whose output loses what ctrace leaves out:
# crate hashes ("core[1234abcd]") and the type it adds after a constant
# ("4: usize"). Every line must match, and no name may stay mangled.
# Exit status: 0 pass, 1 failure, 2 usage error.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/lib.sh"
want_args 2 "DEMANGLE_NAMES WORKDIR" $#
dm=$1 work=$2
command -v c++filt >/dev/null || fatal "no c++filt (binutils)"
[ -x /usr/bin/rustc ] || fatal "Debian's rustc is not installed (make test-deps)"
fresh_dir "$work"
rustcs=(/usr/bin/rustc)
other=$(command -v rustc || true)
[ -z "$other" ] || [ "$(readlink -f "$other")" = "$(readlink -f /usr/bin/rustc)" ] || rustcs+=("$other")
k=0
for rc in "${rustcs[@]}"; do
    k=$((k + 1))
    "$rc" -O -C symbol-mangling-version=v0 -o "$work/rs$k" "$here/../preload/rust_sync.rs" 2>"$work/rs$k.err" ||
        fatal "$rc cannot build rust_sync.rs with v0 names: $(tail -3 "$work/rs$k.err")"
    nm "$work/rs$k" | awk '{ print $NF }' | grep '^_R' | sort -u >"$work/syms$k" || true
    n=$(wc -l <"$work/syms$k")
    [ "$n" -ge 10 ] || fatal "$rc: $n v0 names in rust_sync, not 10 or more"
    "$dm" <"$work/syms$k" >"$work/ours$k"
    c++filt <"$work/syms$k" | sed -E 's/\[[0-9a-f]+\]//g;
        s/: (u8|u16|u32|u64|u128|usize|i8|i16|i32|i64|i128|isize|bool|char)([],>)])/\2/g' >"$work/theirs$k"
    if grep -q '^_R' "$work/ours$k"; then
        fatal "$rc: names left mangled: $(grep '^_R' "$work/ours$k" | head -3)"
    fi
    paste "$work/syms$k" "$work/ours$k" "$work/theirs$k" | awk -F'\t' '$2 != $3' >"$work/diff$k"
    [ ! -s "$work/diff$k" ] || fatal "$rc: $(wc -l <"$work/diff$k") of $n names differ from c++filt's (name, ours, theirs): $(head -3 "$work/diff$k")"
    echo "$prog: $("$rc" --version): $n v0 names, each as c++filt prints it"
done
