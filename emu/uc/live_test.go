package uc

import "testing"

// TestLiveCounts: the counters behind the emu package's leak test count
// every allocation and free of the binding.
func TestLiveCounts(t *testing.T) {
	before := Live()
	e, err := Open(CortexM4)
	if err != nil {
		t.Skip(err)
	}
	nop := func(uint64, uint32) {}
	h, err := e.HookCode(1, 0, nop)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.HookBlock(1, 0, nop); err != nil {
		t.Fatal(err)
	}
	if err := e.MMIOMap(0x40000000, 0x1000, nil, nil); err != nil {
		t.Fatal(err)
	}
	c1, err := e.SaveContext(nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.SaveContext(nil); err != nil {
		t.Fatal(err)
	}
	tr, err := e.NewTracker(true, 16)
	if err != nil {
		t.Fatal(err)
	}
	tr.SetEventHandler(func(uint32) bool { return false })
	tr.SetEventHandler(func(uint32) bool { return false }) // replaces the first
	want := LiveCounts{Engines: 1, Handles: 4, Contexts: 2, Trackers: 1}
	if got := sub(Live(), before); got != want {
		t.Errorf("while open: %+v, want %+v", got, want)
	}
	if err := e.HookDel(h); err != nil {
		t.Fatal(err)
	}
	c1.Free()
	want.Handles, want.Contexts = 3, 1
	if got := sub(Live(), before); got != want {
		t.Errorf("after HookDel and Free: %+v, want %+v", got, want)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if err := e.Close(); err != nil { // idempotent, counts nothing twice
		t.Fatal(err)
	}
	if got := sub(Live(), before); got != (LiveCounts{}) {
		t.Errorf("after Close: %+v, want all zero", got)
	}
}

func sub(a, b LiveCounts) LiveCounts {
	return LiveCounts{a.Engines - b.Engines, a.Handles - b.Handles, a.Contexts - b.Contexts, a.Trackers - b.Trackers}
}
