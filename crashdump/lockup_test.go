package crashdump

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/faultline-dev/faultline/crashdump/fault"
	"github.com/faultline-dev/faultline/unwinders"
)

// The optional "lockup" of faultline.dump/1 survives a write and a read;
// its keys are all optional and unknown ones are ignored; a dump without
// it has none.
func TestLockupField(t *testing.T) {
	d := &Dump{Format: FormatNative, CPU: "cortex-m0",
		Lockup: &fault.LockupInfo{Fault: "HardFault", PC: 0x48, HasPC: true, Detail: "stacking faulted"}}
	d.Regs.Set(unwinders.PC, 0x48)
	var buf bytes.Buffer
	if err := d.WriteSelfContained(&buf); err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(buf.Bytes(), []byte(`"lockup"`)) {
		t.Fatalf("no lockup written:\n%s", buf.String())
	}
	got, err := Parse(buf.Bytes(), "l.json", nil)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Lockup, d.Lockup) {
		t.Errorf("lockup read back as %+v, want %+v", got.Lockup, d.Lockup)
	}
	for src, want := range map[string]*fault.LockupInfo{
		`{"schema": "faultline.dump/1", "registers": {"pc": 1}, "lockup": {}}`:                              {},
		`{"schema": "faultline.dump/1", "registers": {"pc": 1}, "lockup": {"pc": "0x10", "later": [1, 2]}}`: {PC: 0x10, HasPC: true},
		`{"schema": "faultline.dump/1", "registers": {"pc": 1}, "lockup": null}`:                            nil,
		`{"schema": "faultline.dump/1", "registers": {"pc": 1}}`:                                            nil,
	} {
		got, err := Parse([]byte(src), "l.json", nil)
		if err != nil {
			t.Errorf("%s: %v", src, err)
			continue
		}
		if !reflect.DeepEqual(got.Lockup, want) {
			t.Errorf("%s: lockup %+v, want %+v", src, got.Lockup, want)
		}
	}
	if _, err := Parse([]byte(`{"schema": "faultline.dump/1", "registers": {"pc": 1}, "lockup": {"pc": "zz"}}`), "l.json", nil); err == nil {
		t.Error("a lockup pc that is not a number was accepted")
	}
}
