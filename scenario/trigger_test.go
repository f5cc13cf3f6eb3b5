package scenario

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/faultline-dev/faultline/emu"
)

func TestTriggerConfig(t *testing.T) {
	tr := Trigger{CPU: "m4", Set: []string{"crash_scenario=5", "iterations=0x10"}, IRQ: []string{"21@1000"},
		Map: []string{"0x60000000:4k:zero"}, MaxInsns: 5000, Timeout: "3s", RunHandler: true}
	cfg, err := tr.Config("fw.elf")
	if err != nil {
		t.Fatal(err)
	}
	want := emu.Config{ELF: "fw.elf", CPU: "m4", Sets: map[string]uint64{"crash_scenario": 5, "iterations": 16},
		IRQs: []emu.IRQ{{Exception: 21, At: 1000}}, Maps: []emu.Region{{Addr: 0x60000000, Size: 4096, Zero: true}},
		MaxInsns: 5000, Timeout: 3 * time.Second, RunHandler: true}
	want.Maps[0].Perm = cfg.Maps[0].Perm
	if !reflect.DeepEqual(cfg, want) {
		t.Errorf("Config = %+v\nwant %+v", cfg, want)
	}
	if got := strings.Join(tr.Args(), " "); got != "--cpu m4 --set crash_scenario=5 --set iterations=0x10 --irq 21@1000 --map 0x60000000:4k:zero --max-insns 5000 --timeout 3s --run-handler" {
		t.Errorf("Args = %s", got)
	}
	def, err := Trigger{}.Config("fw.elf")
	if err != nil || def.MaxInsns != emu.DefaultMaxInsns || def.Timeout != emu.DefaultTimeout {
		t.Errorf("zero Trigger: %+v, %v; want the default bounds", def, err)
	}
	for _, bad := range []Trigger{
		{IRQ: []string{"21"}}, {IRQ: []string{"3@10"}}, {Set: []string{"=1"}}, {Set: []string{"x=abc"}},
		{Map: []string{"0x0"}}, {CPU: "cortex-a9"}, {Timeout: "soon"}, {Timeout: "-1s"},
	} {
		if _, err := bad.Config("fw.elf"); err == nil {
			t.Errorf("%+v: no error", bad)
		}
	}
	if _, err := (Trigger{}).Config(""); err == nil {
		t.Error("no ELF: no error")
	}
}
