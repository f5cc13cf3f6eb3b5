package heap

import (
	"math/rand"
	"testing"
)

// TestAddrTable runs random puts, gets and deletes on an addrTable and a
// map side by side (clustered addresses, as heap blocks are, and
// scattered ones), with clones taken on the way.
func TestAddrTable(t *testing.T) {
	// A few keys in a table of 64 cells: runs wrap around its end.
	for _, c := range []struct{ spread, keys uint32 }{{8, 5000}, {1 << 20, 5000}, {8, 31}, {4096, 31}} {
		spread := c.spread
		var tab addrTable
		ref := map[uint32]int32{}
		rng := rand.New(rand.NewSource(int64(spread)))
		var snap addrTable
		var snapRef map[uint32]int32
		for step := 0; step < 200000; step++ {
			addr := 0x20000000 + spread*uint32(rng.Intn(int(c.keys)))
			if step%50 == 0 {
				addr = 0 // never a key
			}
			switch rng.Intn(3) {
			case 0:
				if addr != 0 {
					v := int32(rng.Intn(1 << 20))
					tab.put(addr, v)
					ref[addr] = v
				}
			case 1:
				tab.del(addr)
				delete(ref, addr)
			}
			got, ok := tab.get(addr)
			want, wok := ref[addr]
			if ok != wok || got != want {
				t.Fatalf("spread %d step %d: get(%#x) = %d, %v; want %d, %v", spread, step, addr, got, ok, want, wok)
			}
			if tab.len() != len(ref) {
				t.Fatalf("spread %d step %d: %d entries, want %d", spread, step, tab.len(), len(ref))
			}
			if step == 100000 {
				snap, snapRef = tab.clone(), map[uint32]int32{}
				for k, v := range ref {
					snapRef[k] = v
				}
			}
		}
		for k, v := range snapRef {
			if got, ok := snap.get(k); !ok || got != v {
				t.Fatalf("spread %d: the clone lost %#x", spread, k)
			}
		}
		if snap.len() != len(snapRef) {
			t.Fatalf("spread %d: the clone has %d entries, want %d", spread, snap.len(), len(snapRef))
		}
	}
}
