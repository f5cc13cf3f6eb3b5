package heapwalk

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/faultline-dev/faultline/unwinders"
)

const ram = 0x20000000

// layout: symbols at fixed places in a 4 KiB RAM image, the heap after.
var syms = map[string]uint32{
	"__malloc_av_": ram, "__malloc_sbrk_base": ram + 0x500,
	"ucHeap": ram + 0xc00, "pxEnd": ram + 0x504, "xStart": ram + 0x508, "xFreeBytesRemaining": ram + 0x510,
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
	base := uint32(ram + 0x800)
	put(b, ram+0x500, base)
	c := base
	for _, s := range []uint32{24, 32, 16} {
		put(b, c+4, s|1)
		c += s
	}
	// The free chunk's successor has PREV_INUSE clear.
	put(b, base+24+32+4, 16)
	// Empty bins point at themselves; the free chunk is alone in bin 4.
	for i := uint32(1); i < 128; i++ {
		put(b, ram+8*i+8, ram+8*i)
		put(b, ram+8*i+12, ram+8*i)
	}
	free, bin := base+24, uint32(ram+8*4)
	put(b, bin+8, free)
	put(b, bin+12, free)
	put(b, free+8, bin)
	put(b, free+12, bin)
	put(b, ram+8, c) // top
	put(b, c+4, 0x200|1)
	return b
}

// TestNewlibFreeLists: damaged free lists are corruption, and say how.
func TestNewlibFreeLists(t *testing.T) {
	free, bin := uint32(ram+0x800+24), uint32(ram+8*4)
	for _, c := range []struct {
		name string
		edit func(b []byte)
		want string
	}{
		{"cycle", func(b []byte) { put(b, free+8, free) }, "free chunk 0x20000818 is linked twice in the free lists (bin 4 reaches it again"},
		{"out of the heap", func(b []byte) { put(b, bin+8, 0x30000000) }, "free list 4 (head 0x20000020) links to 0x30000000, outside the heap"},
		{"used chunk", func(b []byte) { put(b, bin+8, ram+0x800) }, "links to 0x20000800, which is not a free chunk of the walk"},
		{"back link", func(b []byte) { put(b, free+12, ram+0x40) }, "its back link is 0x20000040, not the chunk before it 0x20000020"},
		{"head back link", func(b []byte) { put(b, bin+12, bin) }, "free list 4 (head 0x20000020) ends at 0x20000818, but the head's back link is 0x20000020"},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := newlibHeap()
			c.edit(b)
			w := Newlib(image(t, b), lookup)
			if w == nil || !strings.Contains(w.Corrupt, c.want) {
				t.Errorf("got %+v, want %q", w, c.want)
			}
		})
	}
	// A free chunk in no list: a note, not corruption.
	b := newlibHeap()
	put(b, bin+8, bin)
	put(b, bin+12, bin)
	w := Newlib(image(t, b), lookup)
	if w.Corrupt != "" || len(w.Notes) != 1 || !strings.Contains(w.Notes[0], "free chunk 0x20000818 (32 bytes) is in no free list") {
		t.Errorf("%+v", w)
	}
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
	put(b, ram+0x800+24+4, 0x12345)
	w = Newlib(image(t, b), lookup)
	if !strings.Contains(w.Corrupt, "chunk at 0x20000818 has size field 0x00012345") {
		t.Errorf("corrupt: %q", w.Corrupt)
	}
	put(b, ram+0x500, 0xffffffff)
	if w := Newlib(image(t, b), lookup); w != nil {
		t.Errorf("an unused heap walked: %+v", w)
	}
}

func FuzzWalk(f *testing.F) {
	f.Add(newlibHeap())
	f.Add(heap4Heap())
	if m, _ := filepath.Glob("../../fixtures/hostile/heapwalk/*.bin"); len(m) > 0 {
		for _, p := range m {
			if b, err := os.ReadFile(p); err == nil {
				f.Add(b)
			}
		}
	}
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

// heap4Heap: ucHeap at 0xc00 with blocks of 16 (used), 24 (free), 32
// (used), then the end marker.
func heap4Heap() []byte {
	b := make([]byte, 0x1000)
	const used = 1 << 31
	put(b, ram+0xc00+4, 16|used)
	put(b, ram+0xc10, ram+0xc48) // the only free block: next is pxEnd
	put(b, ram+0xc10+4, 24)
	put(b, ram+0xc28+4, 32|used)
	put(b, ram+0x504, ram+0xc48)  // pxEnd
	put(b, ram+0x508, ram+0xc10)  // xStart.pxNextFreeBlock
	put(b, ram+0x510, 24)         // xFreeBytesRemaining
	put(b, ram+0x500, 0xffffffff) // newlib never ran
	return b
}

func TestHeap4(t *testing.T) {
	b := heap4Heap()
	ws, err := Find(image(t, b), lookup)
	if err != nil || len(ws) != 1 {
		t.Fatalf("%v %v", ws, err)
	}
	w := ws[0]
	if w.Corrupt != "" || len(w.Notes) != 0 || w.UsedBytes != 48 || w.FreeBytes != 24 || w.FreeBlocks != 1 {
		t.Errorf("%+v", w)
	}
	for _, c := range []struct {
		name string
		edit func(b []byte)
		want string
	}{
		{"free list cycle", func(b []byte) { put(b, ram+0xc10, ram+0xc10) }, "the free list from xStart comes back to 0x20000c10 (a cycle)"},
		{"free list out of RAM", func(b []byte) { put(b, ram+0x508, 0x30000000) }, "reaches 0x30000000"},
		{"size garbage", func(b []byte) { put(b, ram+0xc10+4, 0x7fff0001) }, "block at 0x20000c10 has xBlockSize 0x7fff0001"},
		{"pxEnd before the heap", func(b []byte) { put(b, ram+0x504, ram+0x10) }, "pxEnd 0x20000010 is not within 1 GiB after the start of ucHeap"},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := heap4Heap()
			c.edit(b)
			if w := Heap4(image(t, b), lookup); !strings.Contains(w.Corrupt, c.want) {
				t.Errorf("got %+v, want %q", w, c.want)
			}
		})
	}
}
