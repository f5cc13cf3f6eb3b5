package crashdump

// A generator of probe-rs coredumps from native dumps that does not use
// the importer: it reads the manifest with encoding/json and writes the
// MessagePack value probe-rs's CoreDump::store writes (rmp_serde
// write_named: structs as maps keyed by field name, unit enum variants
// as their name, RegisterValue as {"U32": n}, Range as {"start", "end"},
// Vec<u8> as an array of integers), field by field with the msgpack
// module's encoder. One file is written in rmp_serde's compact form
// (structs as arrays), which probe-rs's reader (from_slice) accepts too.
//
//	go test ./crashdump -run TestProbeRSFixtures -update   # rewrite fixtures/import/probe-rs

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/faultline-dev/faultline/unwinders"
)

// probeRSSources are the native dumps the probe-rs fixtures derive from:
// ARMv7-M on the main and the process stack, ARMv7E-M with an extended
// (FP) frame, ARMv6-M and ARMv8-M FreeRTOS crashes. The Cortex-M4F crash
// is written twice more as probe-rs writes real chips' dumps: core_type
// armv7m for every v7 core (the M4 and M7 included; the fpu_support flag
// is the core's own), once with the FPU flag and once without (a file of
// an FPU-less core: the M4F ELF cannot be its firmware).
var probeRSSources = []struct {
	manifest string // relative to the repository
	compact  bool   // structs as arrays (rmp_serde::to_vec) instead of maps
	coreType string // written instead of the CPU's own core type ("" = its own)
	noFPU    bool   // fpu_support false whatever the registers
}{
	{"fixtures/qemu/gcc-m3-O2-null_write_deep.json", false, "", false},
	{"fixtures/qemu/gcc-m3-O2-psp_thread.json", true, "", false},
	{"fixtures/qemu/gcc-m4f-O2-fpu_crash.json", false, "", false},
	{"fixtures/qemu/gcc-m4f-O2-fpu_crash.json", false, "armv7m", false},
	{"fixtures/qemu/gcc-m4f-O2-null_write_deep.json", false, "armv7m", true},
	{"fixtures/rtos/freertos/gcc-m0-O2.json", false, "", false},
	{"fixtures/rtos/freertos/gcc-m33-O2.json", false, "", false},
}

// probeRSName is the fixture file written for a source manifest.
func probeRSName(manifest, coreType string, noFPU bool) string {
	name := strings.TrimSuffix(filepath.Base(manifest), ".json")
	if coreType != "" {
		name += "-" + coreType
	}
	if noFPU {
		name += "-nofpu"
	}
	return name + ".coredump"
}

// genManifest is what the generator reads from a native manifest.
type genManifest struct {
	cpu  string
	regs map[string]uint32
	mem  []srcRegion
}

func readGenManifest(t testing.TB, path string) genManifest {
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		CPU       string            `json:"cpu"`
		Registers map[string]string `json:"registers"`
		Memory    []struct{ Address, File, Hex string }
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	g := genManifest{cpu: m.CPU, regs: map[string]uint32{}}
	for k, v := range m.Registers {
		g.regs[k] = mustHex32(t, v)
	}
	for _, e := range m.Memory {
		r := srcRegion{Addr: mustHex32(t, e.Address)}
		if e.File != "" {
			r.Data, err = os.ReadFile(filepath.Join(filepath.Dir(path), e.File))
		} else {
			r.Data, err = hex.DecodeString(e.Hex)
		}
		if err != nil {
			t.Fatal(err)
		}
		g.mem = append(g.mem, r)
	}
	return g
}

// probeRSIDs are probe-rs's Cortex-M register ids (DCRSR REGSEL) of the
// registers a native manifest names.
func probeRSIDs() map[string]uint16 {
	ids := map[string]uint16{"sp": 13, "lr": 14, "pc": 15, "xpsr": 16, "msp": 17, "psp": 18, "fpscr": 33}
	for i := range 13 {
		ids["r"+strconv.Itoa(i)] = uint16(i)
	}
	for i := range 32 {
		ids["s"+strconv.Itoa(i)] = uint16(64 + i)
	}
	return ids
}

// genProbeRS lays out the coredump of one native manifest.
func genProbeRS(t testing.TB, g genManifest, compact bool, coreTypeAs string, noFPU bool) []byte {
	var buf bytes.Buffer
	e := msgpack.NewEncoder(&buf)
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	// A struct: a map of field names (write_named) or an array (to_vec).
	structHdr := func(names ...string) func(int) {
		if compact {
			must(e.EncodeArrayLen(len(names)))
		} else {
			must(e.EncodeMapLen(len(names)))
		}
		return func(i int) {
			if !compact {
				must(e.EncodeString(names[i]))
			}
		}
	}
	coreType := map[string]string{"cortex-m0": "armv6m", "cortex-m3": "armv7m", "cortex-m4": "armv7em", "cortex-m33": "armv8m"}[g.cpu]
	if coreType == "" {
		t.Fatalf("cpu %q: no probe-rs core type", g.cpu)
	}
	if coreTypeAs != "" {
		coreType = coreTypeAs
	}
	_, fpu := g.regs["s0"]
	if noFPU {
		fpu = false
	}

	field := structHdr("registers", "data", "instruction_set", "supports_native_64bit_access", "core_type", "fpu_support", "floating_point_register_count")

	// registers: HashMap<RegisterId, RegisterValue>; written in id order.
	field(0)
	ids := probeRSIDs()
	regs := map[uint16]uint32{}
	for name, v := range g.regs {
		if id, ok := ids[name]; ok && (fpu || id < 33) {
			regs[id] = v
		}
	}
	// EXTRA (id 20): CONTROL[31:24] FAULTMASK[23:16] BASEPRI[15:8] PRIMASK[7:0].
	regs[20] = g.regs["control"]<<24 | g.regs["faultmask"]<<16 | g.regs["basepri"]<<8 | g.regs["primask"]
	keys := make([]uint16, 0, len(regs))
	for id := range regs {
		keys = append(keys, id)
	}
	slices.Sort(keys)
	must(e.EncodeMapLen(len(keys)))
	for _, id := range keys {
		must(e.EncodeUint(uint64(id)))
		must(e.EncodeMapLen(1)) // newtype variant: {"U32": value}
		must(e.EncodeString("U32"))
		must(e.EncodeUint(uint64(regs[id])))
	}

	// data: Vec<(Range<u64>, Vec<u8>)>.
	field(1)
	must(e.EncodeArrayLen(len(g.mem)))
	for _, r := range g.mem {
		must(e.EncodeArrayLen(2)) // the tuple
		rangeField := structHdr("start", "end")
		rangeField(0)
		must(e.EncodeUint(uint64(r.Addr)))
		rangeField(1)
		must(e.EncodeUint(uint64(r.Addr) + uint64(len(r.Data))))
		must(e.EncodeArrayLen(len(r.Data)))
		for _, b := range r.Data {
			must(e.EncodeUint(uint64(b)))
		}
	}

	field(2)
	must(e.EncodeString("Thumb2"))
	field(3)
	must(e.EncodeBool(false))
	field(4)
	must(e.EncodeString(coreType))
	field(5)
	must(e.EncodeBool(fpu))
	field(6)
	if fpu {
		must(e.EncodeUint(32))
	} else {
		must(e.EncodeUint(0))
	}
	return buf.Bytes()
}

// The probe-rs fixtures equal the generator's output, and the importer
// reads back exactly the registers, memory and core type written.
func TestProbeRSFixtures(t *testing.T) {
	dir := filepath.Join("..", "fixtures", "import", "probe-rs")
	for _, src := range probeRSSources {
		name := probeRSName(src.manifest, src.coreType, src.noFPU)
		t.Run(name, func(t *testing.T) {
			g := readGenManifest(t, filepath.Join("..", src.manifest))
			want := genProbeRS(t, g, src.compact, src.coreType, src.noFPU)
			path := filepath.Join(dir, name)
			if *update {
				if err := os.MkdirAll(dir, 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, want, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			got, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("%s differs from the generator's output: go test ./crashdump -run TestProbeRSFixtures -update", path)
			}
			d, err := Load(path)
			if err != nil {
				t.Fatal(err)
			}
			if d.Format != FormatProbeRS || len(d.Warnings) != 0 {
				t.Errorf("format %q, warnings %q", d.Format, d.Warnings)
			}
			wantCPU := map[string]string{"cortex-m0": "armv6-m", "cortex-m3": "armv7-m", "cortex-m4": "armv7e-m", "cortex-m33": "armv8-m"}[g.cpu]
			if src.coreType == "armv7m" {
				wantCPU = "armv7-m"
			}
			_, wantFPU := g.regs["s0"]
			wantFPU = wantFPU && !src.noFPU
			if d.FPU == nil || *d.FPU != wantFPU {
				t.Errorf("fpu %v, want %v", d.FPU, wantFPU)
			}
			if d.CPU != wantCPU || d.Profile() != unwinders.ProfileOf(g.cpu) {
				t.Errorf("cpu %q (%v), want %q", d.CPU, d.Profile(), wantCPU)
			}
			for name, v := range g.regs {
				if src.noFPU && (name == "fpscr" || name[0] == 's' && name != "sp") {
					continue
				}
				reg, ok := unwinders.ParseReg(name)
				if !ok {
					t.Fatalf("register %q", name)
				}
				if got, ok := d.Regs.Get(reg); !ok || got != v {
					t.Errorf("%s = %#x (known %v), want %#x", name, got, ok, v)
				}
			}
			if len(d.Memory) != len(g.mem) {
				t.Fatalf("%d regions, want %d", len(d.Memory), len(g.mem))
			}
			for i, r := range g.mem {
				if d.Memory[i].Addr != r.Addr || !bytes.Equal(d.Memory[i].Data, r.Data) {
					t.Errorf("region %d at %#x (%d bytes), want %#x (%d bytes)", i, d.Memory[i].Addr, len(d.Memory[i].Data), r.Addr, len(r.Data))
				}
			}
		})
	}
}
