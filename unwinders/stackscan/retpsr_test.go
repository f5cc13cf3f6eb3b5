package stackscan

import (
	"encoding/binary"
	"testing"

	"github.com/faultline-dev/faultline/unwinders"
)

// On ARMv8-M the stacked xPSR's bit 20 is RETPSR.SFPA (Secure code with FP
// context was interrupted): a real frame, which the reserved-bits check
// must accept there and still refuse on ARMv7-M.
func TestPlausibleFrameSFPA(t *testing.T) {
	frame := make([]byte, 32)
	binary.LittleEndian.PutUint32(frame[24:], 0x1000) // return address
	binary.LittleEndian.PutUint32(frame[28:], 0x61100000)
	im := &unwinders.Image{}
	if err := im.AddLayer(unwinders.Region{Name: "ram", Addr: 0x20000000, Data: frame}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		prof unwinders.Profile
		exc  unwinders.ExcReturn
		want string
	}{
		{unwinders.V8M, 0xFFFFFFBC, ""},
		{unwinders.V7M, 0xFFFFFFFD, "stacked xPSR has reserved bits set"},
	} {
		tg := &unwinders.Target{Mem: im, Profile: c.prof}
		if got := plausibleFrame(tg, c.exc, 0x20000000); got != c.want {
			t.Errorf("%v: %q, want %q", c.prof, got, c.want)
		}
	}
}
