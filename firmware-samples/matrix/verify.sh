#!/usr/bin/env bash
# Run every (build, scenario) case of matrix.json in faultline's emulator and
# check it against the spec:
#   - the firmware faults, the handler entered is expect.exception and every
#     cause in expect.causes is set (as `faultline analyze` names them);
#   - in the dump's truth, the frame right after the first exception frame
#     is expect.function, and the truth goes on down to main and
#     Reset_Handler (for psp_thread: to the thread's entry function, which
#     was entered with LR = 0xFFFFFFFF; for the RTOS kernels' cases: to the
#     crashing task's entry); a GCC clone suffix (.constprop.0) on the
#     faulting function is ignored;
#   - no frame of the truth is in libgcc's EHABI unwinder or the C++ runtime's
#     throw path (a sign that the shadow stack kept frames a landing-pad jump
#     abandoned), except in cxx_terminate, which crashes inside the unwinder.
# It also runs `faultline compare` on each dump and lists the cases where
# the auto unwinder is not exact (informational: not a failure).
#
# Usage: verify.sh [-f FAULTLINE] [-j JOBS] [-k DIR] [-s SPEC] [BUILD|SCENARIO...]
#   -f  faultline binary (default: $FAULTLINE, else `faultline` on PATH,
#       else one built from this checkout into a temporary directory)
#   -j  parallel cases (default 2)
#   -k  keep the dumps and reports in DIR (default: a temporary directory,
#       removed at the end)
#   -s  spec file (default: matrix.json next to this script)
#   Names restrict the run to those builds and/or scenarios.
# Exit status: 0 when every case passes, 1 otherwise.
# Needs bash, jq and coreutils.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
spec=$here/matrix.json
fl=${FAULTLINE:-}
jobs=2
keep=
while getopts "f:j:k:s:h" opt; do
	case $opt in
	f) fl=$OPTARG ;;
	j) jobs=$OPTARG ;;
	k) keep=$OPTARG ;;
	s) spec=$OPTARG ;;
	h) sed -n '2,24p' "$0"; exit 0 ;;
	*) exit 2 ;;
	esac
done
shift $((OPTIND - 1))

if [ -n "$keep" ]; then
	mkdir -p "$keep"
	work=$(cd "$keep" && pwd)
else
	work=$(mktemp -d)
	trap 'rm -rf "$work"' EXIT
fi

if [ -z "$fl" ]; then
	if command -v faultline >/dev/null 2>&1; then
		fl=$(command -v faultline)
	else
		echo "verify: building faultline from $(cd "$here/../.." && pwd)" >&2
		(cd "$here/../.." && go build -o "$work/faultline" ./cmd/faultline)
		fl=$work/faultline
	fi
fi
specdir=$(cd "$(dirname "$spec")" && pwd)

# One line per case: build, elf, scenario, emulate arguments (space-separated;
# no value contains a space), and the scenario as compact JSON.
jq -r --argjson only "$(printf '%s\n' "$@" | jq -R . | jq -s 'map(select(. != ""))')" '
	.scenarios as $s | .builds[] as $b | $s[] |
	select((.requires - $b.features) == []) |
	.name as $sn |
	select(($only | length) == 0 or any($only[]; . == $b.name or . == $sn)) |
	.trigger as $t |
	([ "--cpu", $b.cpu ] +
	 ([$t.set[]? | ["--set", .]] | add // []) +
	 ([$t.irq[]? | ["--irq", .]] | add // []) +
	 ([$t.map[]? | ["--map", .]] | add // []) +
	 (if ($t.call // "") != "" then ["--call", $t.call] else [] end) +
	 (if ($t.max_insns // 0) != 0 then ["--max-insns", ($t.max_insns | tostring)] else [] end) +
	 (if ($t.timeout // "") != "" then ["--timeout", $t.timeout] else [] end) +
	 (if $t.run_handler == true then ["--run-handler"] else [] end) +
	 (if $t.imprecise_stores == true then ["--imprecise-stores"] else [] end)) as $args |
	[$b.name, $b.elf, .name, ($args | join(" ")), (. | tojson)] | @tsv' "$spec" >"$work/cases.tsv"

total=$(wc -l <"$work/cases.tsv")
if [ "$total" -eq 0 ]; then
	echo "verify: no cases" >&2
	exit 1
fi

run_case() {
	local build=$1 elf=$2 scn=$3 argstr=$4 sjson=$5
	local id="$build.$scn" dump="$work/$build.$scn.json"
	local -a args
	read -r -a args <<<"$argstr"

	local out
	if ! out=$("$fl" emulate --elf "$specdir/$elf" -o "$dump" "${args[@]}" 2>&1); then
		echo "FAIL $id: emulate: $out"
		return
	fi
	local ana
	if ! ana=$("$fl" analyze --elf "$specdir/$elf" --format json "$dump" 2>&1); then
		echo "FAIL $id: analyze: $ana"
		return
	fi
	local thread_entry=
	case $scn in
	psp_thread*) thread_entry=psp_thread_entry ;;
	freertos_crash*) thread_entry=net_task ;;   # the RTOS kernels: the crashing task's entry
	zephyr_crash*) thread_entry=z_thread_entry ;;
	esac
	local problems
	problems=$(jq -r -n --argjson a "$ana" --argjson s "$sjson" --slurpfile d "$dump" \
		--arg entry "$thread_entry" '
		($d[0].truth.frames // []) as $t | $s.expect.function as $fn | $s.expect.exception as $exc |
		([$a.fault.causes[]? | .register + "." + .bit]) as $have |
		($t | map(.kind == "exception") | index(true)) as $x |
		[ (if $a.fault.exception != $exc then "exception \($a.fault.exception), want \($exc)" else empty end),
		  ($s.expect.causes[] | select(. as $c | $have | index($c) | not) | "cause \(.) not set (have \($have | join(",")))"),
		  (if $t == [] then "no truth" else empty end),
		  (if $x == null then "no exception frame in the truth"
		   elif ($t[$x + 1].function // "" | sub("(\\.(constprop|isra|part)\\.[0-9]+|\\.cold)+$"; "")) != $fn then "faulting function \($t[$x + 1].function // "?"), want \($fn)"
		   else empty end),
		  (if $entry != "" then
		     (if ($t[-1].function // "") != $entry then "truth ends at \($t[-1].function // "?"), want \($entry)" else empty end)
		   elif ($t | length) < 2 or $t[-1].function != "Reset_Handler" or $t[-2].function != "main" then
		     "truth does not end main < Reset_Handler (ends \([$t[-2:][] | .function // "<exc>"] | join(" < ")))"
		   else empty end),
		  (if ($s.name | startswith("cxx_terminate")) then empty else
		   ($t[] | select(.kind != "exception") | .function // "" |
		     select(test("^(_Unwind_|__gnu_Unwind_|___Unwind_|unwind_phase2|__cxa_throw$|__cxa_end_cleanup$|__cxa_rethrow$|restore_core_regs)")) |
		     "truth holds the unwinder frame \(.)") end),
		  ($t[] | select(.kind != "exception" and (.function // "") == "") | "truth frame without a function at \(.pc)")
		] | unique | join("; ")')
	if [ -n "$problems" ]; then
		echo "FAIL $id: $problems"
		return
	fi
	local cmp exact
	if cmp=$("$fl" compare --elf "$specdir/$elf" --format json "$dump" 2>/dev/null); then
		exact=$(jq -r 'if .scores.auto == null then "?" else .scores.auto.exact end' <<<"$cmp")
		if [ "$exact" != true ]; then
			jq -r '"  truth: " + ([.truth.frames as $t | ($t | map(.kind == "exception") | index(true)) as $x |
				$t[($x // -1) + 1:][] | select(.kind != "exception") | .function] | join(" < ")) + "\n" +
				"  auto:  " + ([.results[] | select(.unwinder == "auto") | .frames as $f |
				($f | map(.kind == "exception") | index(true)) as $x | $f[($x // -1) + 1:][] |
				select(.kind != "exception" and .kind != "inlined") | .function // "??"] | join(" < ")) +
				"  [" + ([.results[] | select(.unwinder == "auto") | .stop][0] // "") + "]"' \
				<<<"$cmp" >"$work/$id.notexact.txt" 2>/dev/null || true
		fi
	else
		exact="?"
	fi
	echo "PASS $id auto_exact=$exact"
}
export -f run_case
export fl work specdir

start=$(date +%s)
tr '\t' '\037' <"$work/cases.tsv" |
	xargs -d '\n' -P "$jobs" -I{} bash -c 'IFS=$'"'"'\037'"'"' read -r b e n a j <<<"$1"; run_case "$b" "$e" "$n" "$a" "$j"' _ {} \
	>"$work/results.txt"
secs=$(( $(date +%s) - start ))

sort -o "$work/results.txt" "$work/results.txt"
pass=$(grep -c '^PASS' "$work/results.txt" || true)
fail=$(grep -c '^FAIL' "$work/results.txt" || true)
grep '^FAIL' "$work/results.txt" || true
notexact=$(grep '^PASS' "$work/results.txt" | grep -v 'auto_exact=true' | sed 's/^PASS \([^ ]*\) auto_exact=\(.*\)$/\1 (\2)/' || true)
if [ -n "$notexact" ]; then
	echo "auto not exact ($(wc -l <<<"$notexact") cases; informational):"
	sed 's/^/  /' <<<"$notexact"
fi
echo "verify: $pass/$total cases pass, $fail fail ($secs s, $jobs jobs)"
[ "$fail" -eq 0 ]
