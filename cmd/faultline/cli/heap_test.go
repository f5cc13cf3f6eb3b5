package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// heapSummary reduces a faultline.heap/1 document to what the planted bugs
// decide: each live site (bytes, blocks, the two innermost functions of the
// allocation stack) and each error (kind, where it happened, where its
// block was allocated and freed).
func heapSummary(t *testing.T, d *HeapDoc) []string {
	t.Helper()
	fn := func(fr []HeapFrame, i int) string {
		if i < len(fr) {
			return fr[i].Function
		}
		return "-"
	}
	var out []string
	check := func(what string, fr []HeapFrame) {
		for _, f := range fr {
			if f.Function == "" || f.File == "" || f.Line == 0 {
				t.Errorf("%s: frame %+v has no function, file or line", what, f)
			}
		}
	}
	for _, s := range d.Sites {
		reach := ""
		if s.Reach != "still-reachable" {
			reach = " " + s.Reach
		}
		out = append(out, fmt.Sprintf("site %d bytes %d blocks %s < %s%s", s.Bytes, s.Blocks, fn(s.Frames, 0), fn(s.Frames, 1), reach))
		check("site", s.Frames)
	}
	for _, e := range d.Errors {
		out = append(out, fmt.Sprintf("%s in %s, allocated in %s, freed in %s", e.Kind, fn(e.Frames, 0), fn(e.AllocatedAt, 0), fn(e.FreedAt, 0)))
		check(e.Kind, e.Frames)
		check(e.Kind+" allocated", e.AllocatedAt)
		check(e.Kind+" freed", e.FreedAt)
	}
	return out
}

// TestHeapPlanted runs `faultline heap` on the heap firmware (C with
// newlib, C++ new/delete, the heap_4-style allocator) for every scenario:
// the report names exactly the planted leaks and errors, with their call
// stacks, and nothing else; the clean runs report nothing live.
func TestHeapPlanted(t *testing.T) {
	skipWithoutEmulator(t)
	anon := "(anonymous namespace)::"
	type heapCase struct {
		elf      string
		scenario int
		want     []string
	}
	cases := []heapCase{
		{"heap-c", 0, nil},
		{"heap-c", 1, []string{
			"site 144 bytes 3 blocks make_packet < leak_packets",
			"site 20 bytes 1 blocks copy_name < leak_name"}},
		{"heap-c", 2, []string{"double-free in double_free, allocated in double_free, freed in double_free"}},
		{"heap-c", 3, []string{
			"site 32 bytes 1 blocks invalid_free < main",
			"invalid-free in invalid_free, allocated in invalid_free, freed in -"}},
		{"heap-c", 4, []string{"use-after-free in use_after_free, allocated in use_after_free, freed in use_after_free"}},
		{"heap-c", 5, []string{
			"site 20 bytes 1 blocks overflow < main",
			"site 20 bytes 1 blocks overflow < main",
			"overflow in fill, allocated in overflow, freed in -"}},
		{"heap-cxx", 0, nil},
		{"heap-cxx", 1, []string{
			"site 100 bytes 1 blocks " + anon + "make_buffer(unsigned int) < " + anon + "leak_buffer()",
			// The queue's head was forgotten: its first node is lost,
			// the second only reached from it.
			"site 32 bytes 1 blocks " + anon + "Queue::push(unsigned long) < " + anon + "leak_nodes() indirectly-lost",
			"site 32 bytes 1 blocks " + anon + "Queue::push(unsigned long) < " + anon + "leak_nodes() definitely-lost"}},
		{"heap-cxx", 2, []string{"double-free in " + anon + "double_delete(), allocated in " + anon + "double_delete(), freed in " + anon + "double_delete()"}},
		{"heap-cxx", 3, []string{"invalid-free in " + anon + "invalid_delete(), allocated in -, freed in -"}},
		{"heap-cxx", 4, []string{"use-after-free in " + anon + "use_after_delete(), allocated in " + anon + "use_after_delete(), freed in " + anon + "use_after_delete()"}},
		{"heap-cxx", 5, []string{
			"site 12 bytes 1 blocks " + anon + "make_buffer(unsigned int) < " + anon + "overflow()",
			"site 12 bytes 1 blocks " + anon + "make_buffer(unsigned int) < " + anon + "overflow()",
			"overflow in " + anon + "fill(unsigned char*, unsigned long), allocated in " + anon + "make_buffer(unsigned int), freed in -"}},
		{"heap-rtos", 0, nil},
		{"heap-rtos", 1, []string{
			"site 200 bytes 1 blocks leak_table < main",
			"site 80 bytes 2 blocks new_msg < leak_msgs"}},
		{"heap-rtos", 2, []string{"double-free in double_free, allocated in new_msg, freed in double_free"}},
		{"heap-rtos", 3, []string{"invalid-free in invalid_free, allocated in -, freed in -"}},
		{"heap-rtos", 4, []string{"use-after-free in use_after_free, allocated in new_msg, freed in use_after_free"}},
		{"heap-rtos", 5, []string{
			"site 24 bytes 1 blocks overflow < main",
			"site 24 bytes 1 blocks overflow < main",
			"overflow in fill, allocated in overflow, freed in -"}},
	}
	// Issue 23: the allocator's own statistics walk (mallinfo,
	// vPortGetHeapStats) is no use after free (scenario 9), and a write
	// past the requested size inside the allocator's rounding slack, with
	// no block after it, is an overflow (scenario 10), on newlib,
	// newlib-nano and the heap_4-style allocator, gcc and clang.
	for _, b := range []string{"heap-c", "heap-c-nano", "heap-c-clang", "heap-c-nano-clang", "heap-rtos", "heap-rtos-clang"} {
		cases = append(cases,
			heapCase{b, 9, nil},
			heapCase{b, 10, []string{"site 24 bytes 1 blocks slack_overflow < main", "overflow in fill_words, allocated in slack_overflow, freed in -"}})
		if strings.HasPrefix(b, "heap-c") {
			// Reachability at the end (a NULL write): the block whose
			// only pointer was overwritten and the one whose pointer is
			// left in a returned function's frame (dead stack, no
			// root) are definitely lost; the one in keep[] is not.
			cases = append(cases, heapCase{b, 11, []string{
				"site 40 bytes 1 blocks drop_on_stack < lose_blocks definitely-lost",
				"site 32 bytes 1 blocks lose_blocks < main definitely-lost",
				"site 24 bytes 1 blocks lose_blocks < main",
				// newlib's own state points inside it (its top
				// chunk): no root.
				"site 12 bytes 1 blocks lose_blocks < main definitely-lost"}})
		}
		if b != "heap-c" && b != "heap-rtos" {
			want := []string{"site 144 bytes 3 blocks make_packet < leak_packets", "site 20 bytes 1 blocks copy_name < leak_name"}
			if b == "heap-rtos-clang" {
				want = []string{"site 200 bytes 1 blocks leak_table < main", "site 80 bytes 2 blocks new_msg < leak_msgs"}
			}
			cases = append(cases,
				heapCase{b, 0, nil},
				heapCase{b, 1, want})
		}
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%s-%d", c.elf, c.scenario), func(t *testing.T) {
			elf := filepath.Join(repo, "firmware-samples/heap/build", c.elf+".elf")
			stdout, stderr, code := run(t, "", "heap", "--elf", elf, "--set", fmt.Sprintf("heap_scenario=%d", c.scenario), "--format", "json")
			if code != 0 {
				t.Fatalf("heap: exit %d\n%s", code, stderr)
			}
			var d HeapDoc
			if err := json.Unmarshal([]byte(stdout), &d); err != nil {
				t.Fatal(err)
			}
			if d.Schema != "faultline.heap/1" {
				t.Errorf("schema %q", d.Schema)
			}
			got := heapSummary(t, &d)
			if !slices.Equal(got, c.want) {
				t.Errorf("got\n  %s\nwant\n  %s", strings.Join(got, "\n  "), strings.Join(c.want, "\n  "))
			}
			var live uint64
			for _, s := range d.Sites {
				live += s.Bytes
			}
			if live != d.LiveBytes {
				t.Errorf("sites hold %d bytes, live_bytes says %d", live, d.LiveBytes)
			}
			if d.LiveBlocks > 0 {
				l := d.Leaks
				if l == nil {
					t.Fatalf("no leak summary: %s", d.ReachNote)
				}
				if sum := l.DefinitelyLost.Bytes + l.IndirectlyLost.Bytes + l.PossiblyLost.Bytes + l.StillReachable.Bytes; sum != d.LiveBytes {
					t.Errorf("the leak summary holds %d bytes, live_bytes says %d", sum, d.LiveBytes)
				}
			}
			if c.scenario == 0 && (d.LiveBytes != 0 || d.LiveBlocks != 0 || d.Allocs == 0 || d.Allocs != d.Frees) {
				t.Errorf("clean run: %d bytes in %d blocks live, %d allocations, %d frees", d.LiveBytes, d.LiveBlocks, d.Allocs, d.Frees)
			}
		})
	}
}

// TestHeapTextAndHTML: the other two formats say the same.
func TestHeapTextAndHTML(t *testing.T) {
	skipWithoutEmulator(t)
	elf := filepath.Join(repo, "firmware-samples/heap/build/heap-c.elf")
	stdout, stderr, code := run(t, "", "heap", "--elf", elf, "--set", "heap_scenario=4")
	if code != 0 {
		t.Fatalf("heap: exit %d\n%s", code, stderr)
	}
	for _, want := range []string{"use-after-free", "write of 4 bytes", "freed at:", "use_after_free at ./src/heap_c.c:", "\n1 allocation, 1 free; peak 32 bytes"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("text report lacks %q:\n%s", want, stdout)
		}
	}
	stdout, _, code = run(t, "", "heap", "--elf", elf, "--set", "heap_scenario=1", "--format", "html")
	if code != 0 || !strings.Contains(stdout, "<!DOCTYPE html>") || !strings.Contains(stdout, "leak_packets") {
		t.Errorf("html: exit %d\n%.400s", code, stdout)
	}
	_, stderr, code = run(t, "", "heap", "--elf", elf, "--alloc", "malloc")
	if code != ExitUsage || !strings.Contains(stderr, "--alloc and --free go together") {
		t.Errorf("--alloc alone: exit %d, %s", code, stderr)
	}
	_, stderr, code = run(t, "", "heap", "--elf", elf, "--alloc", "no_such_alloc", "--free", "free")
	if code != ExitUsage || !strings.Contains(stderr, `no function "no_such_alloc"`) {
		t.Errorf("--alloc of a missing function: exit %d (want %d, usage, as emulate --call nosuch), %s", code, ExitUsage, stderr)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--alloc", "malloc", "--free", "malloc"}, "name the same function"},
		{[]string{"--alloc", "malloc", "--free", "free", "--header", "4000000000"}, "--header 4000000000: want 0 to 256"},
		{[]string{"--header", "8"}, "--header goes with --alloc and --free"},
		{[]string{"--set", "no_such_global=1"}, "no_such_global"},
	} {
		_, stderr, code = run(t, "", append([]string{"heap", "--elf", elf}, c.args...)...)
		if code != ExitUsage || !strings.Contains(stderr, c.want) {
			t.Errorf("heap %s: exit %d, %s; want exit %d saying %q", strings.Join(c.args, " "), code, stderr, ExitUsage, c.want)
		}
	}
}

// TestHeapRegress: regress checks expect.heap, passing on the committed
// spec and failing, with the sites named, when a leak or an error exceeds
// the bounds.
func TestHeapRegress(t *testing.T) {
	skipWithoutEmulator(t)
	stdout, stderr, code := run(t, "", "regress", filepath.Join(repo, "firmware-samples/heap/regress.json"))
	if code != 0 {
		t.Fatalf("regress heap spec: exit %d\n%s\n%s", code, stdout, stderr)
	}
	elf, err := filepath.Abs(filepath.Join(repo, "firmware-samples/heap/build/heap-c.elf"))
	if err != nil {
		t.Fatal(err)
	}
	spec := filepath.Join(t.TempDir(), "bad.json")
	if err := os.WriteFile(spec, []byte(`{"schema": "faultline.regress/1", "name": "bad", "scenarios": [
	 {"name": "leaks", "elf": "`+elf+`", "trigger": {"set": ["heap_scenario=1"]},
	  "expect": {"heap": {"leaked_bytes": 0, "sites": [{"function": "leak_packets", "max_bytes": 100}]}}},
	 {"name": "uaf", "elf": "`+elf+`", "trigger": {"set": ["heap_scenario=4"]}, "expect": {"heap": {}}}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code = run(t, "", "regress", spec)
	stdout += stderr
	if code != 1 {
		t.Fatalf("regress bad spec: exit %d, want 1\n%s", code, stdout)
	}
	for _, want := range []string{
		"164 bytes still allocated at the end (in 4 blocks), expected at most 0",
		"144 bytes allocated from leak_packets still live at the end, expected at most 100",
		"make_packet < leak_packets < main",
		"1 heap errors (first: use-after-free), expected at most 0",
		"faultline heap --elf",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("regress output lacks %q:\n%s", want, stdout)
		}
	}
}

// TestHeapReplay: a fault after millions of instructions makes the
// harness go back to its last checkpoint and replay to the faulting
// instruction; the heap tracker goes back with it, so nothing is counted
// twice (the loop makes 2 allocations and 2 frees per round, the crash
// leaves `live` blocks and frees one).
func TestHeapReplay(t *testing.T) {
	skipWithoutEmulator(t)
	const rounds = 20000
	for elf, live := range map[string]int{"heap-c": 4, "heap-rtos": 3} {
		path := filepath.Join(repo, "firmware-samples/heap/build", elf+".elf")
		stdout, stderr, code := run(t, "", "heap", "--elf", path, "--set", "heap_scenario=8",
			"--set", fmt.Sprintf("heap_iterations=%d", rounds), "--timeout", "120s", "--format", "json")
		if code != 0 {
			t.Fatalf("%s: exit %d\n%s", elf, code, stderr)
		}
		var d HeapDoc
		if err := json.Unmarshal([]byte(stdout), &d); err != nil {
			t.Fatal(err)
		}
		allocs := uint64(2*rounds + live + 1)
		if !d.Fault || d.Insns < 5_000_000 || d.Allocs != allocs || d.Frees != 2*rounds+1 || d.LiveBlocks != live || len(d.Errors) != 0 {
			t.Errorf("%s: fault %v after %d instructions, %d allocations, %d frees, %d live blocks, %d errors; want a fault after 5M+, %d, %d, %d, 0",
				elf, d.Fault, d.Insns, d.Allocs, d.Frees, d.LiveBlocks, len(d.Errors), allocs, 2*rounds+1, live)
		}
	}
}
