package heap

import "slices"

// addrTable maps block addresses to slot numbers: open addressing with
// linear probing, deletion by moving the rest of a run back (no
// tombstones). Key 0 marks an empty cell: address 0 is never a block (the
// tracker ignores a null result and a free of null), and it is never
// found. A Go map costs a few times more per lookup, and the tracker makes
// one per allocator call.
type addrTable struct {
	keys  []uint32
	vals  []int32
	n     int
	shift uint // 32 - log2(len(keys))
}

func (t *addrTable) home(addr uint32) int {
	return int((addr * 0x9E3779B1) >> t.shift)
}

// get returns the value of addr.
func (t *addrTable) get(addr uint32) (int32, bool) {
	if addr == 0 || t.n == 0 {
		return 0, false
	}
	mask := len(t.keys) - 1
	for i := t.home(addr); ; i = (i + 1) & mask {
		switch t.keys[i] {
		case addr:
			return t.vals[i], true
		case 0:
			return 0, false
		}
	}
}

// put sets the value of addr (not 0).
func (t *addrTable) put(addr uint32, v int32) {
	if 2*(t.n+1) > len(t.keys) {
		t.grow()
	}
	mask := len(t.keys) - 1
	i := t.home(addr)
	for ; t.keys[i] != 0; i = (i + 1) & mask {
		if t.keys[i] == addr {
			t.vals[i] = v
			return
		}
	}
	t.keys[i], t.vals[i] = addr, v
	t.n++
}

func (t *addrTable) grow() {
	size := 2 * len(t.keys)
	if size < 64 {
		size = 64
	}
	keys, vals := t.keys, t.vals
	t.keys, t.vals = make([]uint32, size), make([]int32, size)
	t.shift = 32
	for s := size; s > 1; s >>= 1 {
		t.shift--
	}
	t.n = 0
	for i, k := range keys {
		if k != 0 {
			t.put(k, vals[i])
		}
	}
}

// del removes addr.
func (t *addrTable) del(addr uint32) {
	if addr == 0 || t.n == 0 {
		return
	}
	mask := len(t.keys) - 1
	i := t.home(addr)
	for ; t.keys[i] != addr; i = (i + 1) & mask {
		if t.keys[i] == 0 {
			return
		}
	}
	// Move back each later entry of the run whose home is not in
	// (i, j] (cyclically): it stays findable from its home.
	for j := (i + 1) & mask; t.keys[j] != 0; j = (j + 1) & mask {
		k := t.home(t.keys[j])
		stays := k > i && k <= j
		if i > j {
			stays = k > i || k <= j
		}
		if !stays {
			t.keys[i], t.vals[i] = t.keys[j], t.vals[j]
			i = j
		}
	}
	t.keys[i], t.vals[i] = 0, 0
	t.n--
}

// len is the number of addresses.
func (t *addrTable) len() int { return t.n }

func (t *addrTable) clone() addrTable {
	c := *t
	c.keys, c.vals = slices.Clone(t.keys), slices.Clone(t.vals)
	return c
}
