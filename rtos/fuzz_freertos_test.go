package rtos

import (
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/faultline-dev/faultline/unwinders"
)

// FuzzFreeRTOSMemory lists the tasks of the FreeRTOS-lookalike gcc-m3-O2
// dump with its RAM replaced by the fuzzer's bytes: discovery must never
// panic or hang, and must report a bounded number of threads. Seeds: the
// oracle dump's RAM and every hostile case of fixtures/hostile/freertos-threads.
func FuzzFreeRTOSMemory(f *testing.F) {
	in, _ := loadFixture(f, "gcc-m3-O2")
	ram, err := os.ReadFile(filepath.Join(fixtureDir, "gcc-m3-O2.ram.bin"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(ram)
	cases, _ := filepath.Glob("../fixtures/hostile/freertos-threads/*.json")
	for _, c := range cases {
		var m struct {
			Memory []struct {
				Hex string `json:"hex"`
			} `json:"memory"`
		}
		b, err := os.ReadFile(c)
		if err != nil {
			f.Fatal(err)
		}
		if err := json.Unmarshal(b, &m); err != nil {
			f.Fatal(err)
		}
		if len(m.Memory) > 0 {
			if h, err := hex.DecodeString(m.Memory[0].Hex); err == nil {
				f.Add(h)
			}
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > len(ram) {
			data = data[:len(ram)]
		}
		img := append(append([]byte(nil), data...), ram[len(data):]...)
		im := &unwinders.Image{}
		if err := im.AddLayer(in.ELF.Segments()...); err != nil {
			t.Fatal(err)
		}
		if err := im.AddLayer(unwinders.Region{Addr: 0x20000000, Data: img}); err != nil {
			t.Fatal(err)
		}
		k, err := Discover(Input{ELF: in.ELF, Mem: im, Regs: in.Regs})
		if err != nil {
			return
		}
		if k == nil || len(k.Threads) > maxTasks {
			t.Fatalf("kernel %v with %d threads", k, len(k.Threads))
		}
		for _, th := range k.Threads {
			if len(th.Name) > 4*maxNameLen {
				t.Fatalf("name of %d bytes", len(th.Name))
			}
		}
	})
}
