package heap

import (
	"math/rand"
	"slices"
	"testing"
)

// refModel is the tracker's block bookkeeping written the plain way (the
// live and freed blocks in maps, the order of frees in a slice searched
// linearly): the oracle of TestSlotsMatchModel.
type refModel struct {
	live  map[uint32]uint32 // addr -> size
	freed map[uint32]uint64 // addr -> freeing instruction
	fifo  []uint32
	drops int // freed blocks dropped beyond maxFreed
}

func (m *refModel) free(addr uint32, insn uint64) string {
	if _, ok := m.live[addr]; !ok {
		if _, ok := m.freed[addr]; ok {
			return DoubleFree
		}
		return InvalidFree
	}
	delete(m.live, addr)
	if len(m.fifo) >= maxFreed {
		delete(m.freed, m.fifo[0])
		m.fifo = m.fifo[1:]
		m.drops++
	}
	if _, ok := m.freed[addr]; !ok {
		m.fifo = append(m.fifo, addr)
	}
	m.freed[addr] = insn
	return ""
}

func (m *refModel) alloc(addr, size uint32) {
	if _, ok := m.freed[addr]; ok {
		delete(m.freed, addr)
		m.fifo = slices.DeleteFunc(m.fifo, func(a uint32) bool { return a == addr })
	}
	m.live[addr] = size
}

// TestSlotsMatchModel drives the tracker's slots (allocations, frees,
// double and invalid frees, more frees than maxFreed remembers, a
// checkpoint and a restore) and the plain model with the same random
// calls and compares the blocks, the order of frees and the errors.
func TestSlotsMatchModel(t *testing.T) {
	tr := New(Options{MaxErrors: 1 << 30})
	tr.hooked = []Func{{Name: "malloc", Op: OpAlloc}, {Name: "free", Op: OpFree}}
	m := &refModel{live: map[uint32]uint32{}, freed: map[uint32]uint64{}}
	rng := rand.New(rand.NewSource(1))
	var cpModel *refModel
	check := func(step int) {
		t.Helper()
		live, freed := map[uint32]uint32{}, map[uint32]uint64{}
		for _, sl := range tr.st.slots {
			switch sl.state {
			case slotLive:
				live[sl.b.addr] = sl.b.size
			case slotFreed:
				freed[sl.b.addr] = sl.freedInsn
			}
		}
		var fifo []uint32
		for _, e := range tr.st.fifo {
			if tr.st.current(e) {
				fifo = append(fifo, tr.st.slots[e.i].b.addr)
			}
		}
		if len(live) != tr.st.nlive || len(freed) != tr.st.nfreed || len(live)+len(freed) != tr.st.byAddr.len() {
			t.Fatalf("step %d: counts: %d live (nlive %d), %d freed (nfreed %d), %d addresses", step, len(live), tr.st.nlive, len(freed), tr.st.nfreed, tr.st.byAddr.len())
		}
		if !mapsEqual(live, m.live) || !mapsEqual(freed, m.freed) || !slices.Equal(fifo, m.fifo) {
			t.Fatalf("step %d: slots differ from the model: %d/%d live, %d/%d freed, fifo %d/%d", step, len(live), len(m.live), len(freed), len(m.freed), len(fifo), len(m.fifo))
		}
	}
	const addrs = 2 * maxFreed
	for step := 0; step < 50000; step++ {
		insn := uint64(step + 1)
		if step == 32000 {
			tr.Checkpoint()
			cp := &refModel{live: maps2(m.live), freed: maps2(m.freed), fifo: slices.Clone(m.fifo), drops: m.drops}
			cpModel = cp
		}
		if step == 40000 {
			tr.st = tr.cp.clone()
			m = cpModel
		}
		if step%997 == 0 {
			check(step)
		}
		addr := 8 * uint32(1+rng.Intn(addrs))
		op := rng.Intn(10)
		if step < 24000 {
			// First more frees than maxFreed remembers, in order.
			addr, op = 8*uint32(1+step/2), 9*(step%2)
		}
		switch {
		case op < 5:
			if _, ok := m.live[addr]; ok {
				continue // the allocator hands out free memory only
			}
			size := uint32(1 + rng.Intn(64))
			m.alloc(addr, size)
			tr.returned(&call{id: 0, size: size, insn: insn}, addr)
		default:
			want := m.free(addr, insn)
			n := len(tr.st.errors)
			tr.free(&call{id: 1, ptr: addr, insn: insn})
			got := ""
			if len(tr.st.errors) > n {
				got = tr.st.errors[n].Kind
			}
			// report keeps the first error of a kind per address.
			if got != want && !(got == "" && want != "") {
				t.Fatalf("step %d: free of %#x: error %q, the model says %q", step, addr, got, want)
			}
		}
	}
	check(-1)
	if m.drops == 0 || cpModel.drops == 0 {
		t.Fatalf("the run never dropped a freed block (%d remembered)", len(m.fifo))
	}
}

func mapsEqual[K comparable, V comparable](a, b map[K]V) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func maps2[K comparable, V any](m map[K]V) map[K]V {
	c := make(map[K]V, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}
