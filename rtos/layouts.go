package rtos

import (
	"sync"

	"github.com/faultline-dev/faultline/elfsym"
)

// Layouts remembers the struct layouts Discover read for one ELF (from its
// debug types, its thread-info table or the defaults), so that a batch of
// dumps of the same firmware pays for reading them once: reading the
// layouts from DWARF costs far more than listing the threads. Pass the same
// Layouts in Input.Layouts for every dump of one ELF. It is safe for
// concurrent use; a Layouts given dumps of another ELF recomputes without
// caching. A nil *Layouts caches nothing.
type Layouts struct {
	mu     sync.Mutex
	elf    *elfsym.File
	zephyr *zephyrCached
}

// zephyrCached is a Zephyr layout and the warnings reading it gave.
type zephyrCached struct {
	l        zephyrLayout
	warnings []string
}

// NewLayouts returns an empty cache.
func NewLayouts() *Layouts { return &Layouts{} }

// zephyrLayout returns the cached Zephyr layout of elf, computing it once.
func (c *Layouts) zephyrLayout(elf *elfsym.File, compute func() (zephyrLayout, []string)) (zephyrLayout, []string) {
	if c == nil {
		return compute()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.elf != nil && c.elf != elf {
		return compute()
	}
	if c.zephyr == nil {
		l, w := compute()
		c.elf, c.zephyr = elf, &zephyrCached{l: l, warnings: w}
	}
	return c.zephyr.l, append([]string(nil), c.zephyr.warnings...)
}
