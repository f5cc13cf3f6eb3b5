package heapwalk

import (
	"encoding/binary"
	"strings"
	"testing"

	"github.com/faultline-dev/faultline/unwinders"
)

const ram = 0x20000000

// layout: symbols at fixed places in a 4 KiB RAM image, the heap after.
var syms = map[string]uint32{
	"__malloc_av_": ram, "__malloc_sbrk_base": ram + 0x100,
	"ucHeap": ram + 0x200, "pxEnd": ram + 0x104, "xStart": ram + 0x108, "xFreeBytesRemaining": ram + 0x110,
}

func lookup(name string) (uint32, bool) { a, ok := syms[name]; return a, ok }

func image(t testing.TB, data []byte) *unwinders.Image {
	im := new(unwinders.Image)
	if err := im.AddLayer(unwinders.Region{Name: "ram", Addr: ram, Data: data}); err != nil {
		t.Fatal(err)
	}
	return im
}

func put(b []byte, addr, v uint32) { binary.LittleEndian.PutUint32(b[addr-ram:], v) }

// newlibHeap: chunks of 24 (used), 32 (free), 16 (used), then top.
func newlibHeap() []byte {
	b := make([]byte, 0x1000)
	base := uint32(ram + 0x400)
	put(b, ram+0x100, base)
	c := base
	for _, s := range []uint32{24, 32, 16} {
		put(b, c+4, s|1)
		c += s
	}
	// The free chunk's successor has PREV_INUSE clear.
	put(b, base+24+32+4, 16)
	put(b, ram+8, c) // top
	put(b, c+4, 0x200|1)
	return b
}

func TestNewlib(t *testing.T) {
	b := newlibHeap()
	ws, err := Find(image(t, b), lookup)
	if err != nil || len(ws) != 2 {
		t.Fatalf("%v %v", ws, err)
	}
	w := ws[1]
	if w.Corrupt != "" || w.UsedBytes != 40 || w.UsedBlocks != 2 || w.FreeBytes != 32+0x200 || w.LargestFree != 0x200 {
		t.Errorf("%+v", w)
	}
	put(b, ram+0x400+24+4, 0x12345)
	w = Newlib(image(t, b), lookup)
	if !strings.Contains(w.Corrupt, "chunk at 0x20000418 has size field 0x00012345") {
		t.Errorf("corrupt: %q", w.Corrupt)
	}
	put(b, ram+0x100, 0xffffffff)
	if w := Newlib(image(t, b), lookup); w != nil {
		t.Errorf("an unused heap walked: %+v", w)
	}
}

func FuzzWalk(f *testing.F) {
	f.Add(newlibHeap())
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 1<<16 {
			return
		}
		b := make([]byte, 0x1000)
		copy(b, data)
		ws, err := Find(image(t, b), lookup)
		if err != nil {
			return
		}
		for _, w := range ws {
			if w.UsedBlocks+w.FreeBlocks != len(w.Blocks) || w.UsedBlocks+w.FreeBlocks > maxBlocks {
				t.Fatalf("inconsistent walk %+v", w)
			}
		}
	})
}
