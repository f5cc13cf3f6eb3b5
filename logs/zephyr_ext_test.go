package logs_test

import (
	"encoding/binary"
	"math/rand"
	"strings"
	"testing"
	"time"

	"github.com/faultline-dev/faultline/analysis"
	"github.com/faultline-dev/faultline/crashdump"
	"github.com/faultline-dev/faultline/elfsym"
	"github.com/faultline-dev/faultline/logs"
	"github.com/faultline-dev/faultline/unwinders"
)

const repo = "../"

// zephyrFixture loads fixtures/zephyr-log (firmware-samples/zephyr-log
// crashed in QEMU) and returns its ELF, its RAM region and the target's
// memory.
func zephyrFixture(t *testing.T) (*elfsym.File, []byte, *crashdump.Dump) {
	t.Helper()
	elf, err := elfsym.Open(repo + "firmware-samples/zephyr-log/build/gcc-m3-O2.elf")
	if err != nil {
		t.Fatal(err)
	}
	d, err := crashdump.Load(repo + "fixtures/zephyr-log/gcc-m3-O2.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range d.Memory {
		if r.Addr == 0x20000000 {
			return elf, r.Data, d
		}
	}
	t.Fatal("no RAM region at 0x20000000")
	return nil, nil, nil
}

func memOf(t *testing.T, elf *elfsym.File, d *crashdump.Dump) unwinders.Memory {
	t.Helper()
	tg, _, err := analysis.NewTarget(elf, d)
	if err != nil {
		t.Fatal(err)
	}
	return tg.Mem
}

// TestZephyrLogCorrupt: a log buffer with corrupt words (headers, sizes,
// string indexes, the ring's indexes) decodes what it can or says why,
// never panics, and stays bounded in time and output.
func TestZephyrLogCorrupt(t *testing.T) {
	elf, ram, d := zephyrFixture(t)
	buf, ok := elf.Symbol("buf32")
	ctl, ok2 := elf.Symbol("log_buffer")
	if !ok || !ok2 {
		t.Fatal("no buf32/log_buffer in the sample")
	}
	orig := append([]byte(nil), ram...)
	rng := rand.New(rand.NewSource(24))
	le := binary.LittleEndian
	decoded, failed := 0, 0
	start := time.Now()
	for round := 0; round < 400; round++ {
		copy(ram, orig)
		for k := 0; k < 1+round%5; k++ {
			var off uint32
			if round%7 == 0 {
				off = ctl - 0x20000000 + 4*uint32(rng.Intn(4))
			} else {
				off = buf - 0x20000000 + 4*uint32(rng.Intn(128))
			}
			switch rng.Intn(3) {
			case 0:
				le.PutUint32(ram[off:], rng.Uint32())
			case 1:
				le.PutUint32(ram[off:], le.Uint32(ram[off:])^1<<uint(rng.Intn(32)))
			default:
				le.PutUint32(ram[off:], uint32(rng.Intn(300)))
			}
		}
		l, found, err := logs.FindZephyr(elf, memOf(t, elf, d), nil)
		if !found {
			t.Fatalf("round %d: the buffer is no longer found", round)
		}
		if err != nil {
			failed++
			if !strings.Contains(err.Error(), "0x2000") {
				t.Errorf("round %d: error does not say where: %v", round, err)
			}
			continue
		}
		decoded++
		if len(l.Text) > logs.MaxText*5 || len(l.Entries) > 128 {
			t.Errorf("round %d: %d bytes, %d entries from a 512-byte ring", round, len(l.Text), len(l.Entries))
		}
	}
	copy(ram, orig)
	if decoded == 0 || failed == 0 {
		t.Errorf("decoded %d, refused %d: the corruptions should give both", decoded, failed)
	}
	if el := time.Since(start); el > 20*time.Second {
		t.Errorf("400 corrupt buffers took %v", el)
	}
}

// TestZephyrLogNoStorage: a log_buffer that does not point at buf32 (not
// initialised) is a warning naming both, not a decode.
func TestZephyrLogNoStorage(t *testing.T) {
	elf, ram, d := zephyrFixture(t)
	ctl, _ := elf.Symbol("log_buffer")
	orig := append([]byte(nil), ram...)
	defer copy(ram, orig)
	for i := uint32(0); i < 64; i++ {
		ram[ctl-0x20000000+i] = 0
	}
	_, found, err := logs.FindZephyr(elf, memOf(t, elf, d), nil)
	if !found || err == nil || !strings.Contains(err.Error(), "does not point at buf32") {
		t.Errorf("found %v, err %v", found, err)
	}
}

// TestZephyrLogEmpty: a ring nothing was logged into (indexes 0, storage
// zero) is an empty log with a note, not a warning.
func TestZephyrLogEmpty(t *testing.T) {
	elf, ram, d := zephyrFixture(t)
	buf, _ := elf.Symbol("buf32")
	ctl, _ := elf.Symbol("log_buffer")
	orig := append([]byte(nil), ram...)
	defer copy(ram, orig)
	for i := uint32(0); i < 16; i++ {
		ram[ctl-0x20000000+i] = 0
	}
	// Indexes 0 over messages: whatever chain of whole messages runs from
	// index 0 to the ring's end is shown, all as already printed.
	l, found, err := logs.FindZephyr(elf, memOf(t, elf, d), nil)
	if !found || err != nil {
		t.Fatalf("indexes 0 over logged messages: found %v, err %v", found, err)
	}
	for _, e := range l.Entries {
		if e.State != "output" {
			t.Errorf("indexes 0: entry %+v, want only already printed ones", e)
		}
	}
	for i := uint32(0); i < 512; i++ {
		ram[buf-0x20000000+i] = 0
	}
	l, found, err = logs.FindZephyr(elf, memOf(t, elf, d), nil)
	if !found || err != nil || l.Text != "" || len(l.Entries) != 0 || !strings.Contains(l.Note, "holds no message") {
		t.Errorf("empty ring: found %v, err %v, log %+v", found, err, l)
	}
}
