package stackscan

import (
	"sort"

	"github.com/faultline-dev/faultline/unwinders"
)

// addrVTOR is the Vector Table Offset Register (ARMv7-M ARM B3.2.5).
const addrVTOR = 0xE000ED08

// maxVectors bounds the vector table: 16 system entries and at most 496
// external interrupts on ARMv7-M/ARMv8-M.
const maxVectors = 16 + 496

// vectorSet is the set of handler addresses (Thumb bit clear) of a vector
// table, sorted.
type vectorSet struct{ starts []uint32 }

func (v *vectorSet) has(a uint32) bool {
	i := sort.Search(len(v.starts), func(i int) bool { return v.starts[i] >= a })
	return i < len(v.starts) && v.starts[i] == a
}

// readVectors reads the vector table the crashed core used: at VTOR when
// the dump holds the SCB, else at the .isr_vector (or .vectors) section,
// else at address 0. It stops at the section's end, at the first unmapped
// word, or after maxVectors entries. Entry 0 is the initial SP and is
// skipped; only odd (Thumb) entries name handlers.
func readVectors(t *unwinders.Target) *vectorSet {
	base, n := uint32(0), uint32(maxVectors)
	secBase, secSize, haveSec := uint32(0), uint32(0), false
	if t.Prog != nil {
		for _, name := range []string{".isr_vector", ".vectors"} {
			if a, data, ok := t.Prog.Section(name); ok && len(data) >= 8 {
				secBase, secSize, haveSec = a, uint32(min(len(data), 4*maxVectors)), true
				break
			}
		}
	}
	if v, err := unwinders.ReadU32(t.Mem, addrVTOR); err == nil {
		base = v &^ 0x7F
	} else if haveSec {
		base = secBase
	}
	if haveSec && base == secBase {
		n = secSize / 4
	}
	set := &vectorSet{}
	for i := uint32(1); i < n; i++ {
		a := uint64(base) + 4*uint64(i)
		if a > 0xFFFFFFFC {
			break
		}
		w, err := unwinders.ReadU32(t.Mem, uint32(a))
		if err != nil {
			break
		}
		if w&1 == 1 {
			set.starts = append(set.starts, w&^1)
		}
	}
	sort.Slice(set.starts, func(i, j int) bool { return set.starts[i] < set.starts[j] })
	return set
}
