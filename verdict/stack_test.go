package verdict

import (
	"encoding/binary"
	"reflect"
	"testing"

	"github.com/faultline-dev/faultline/crashdump/fault"
	"github.com/faultline-dev/faultline/rtos"
	"github.com/faultline-dev/faultline/unwinders"
)

func regs(kv ...uint32) unwinders.Registers {
	var r unwinders.Registers
	for i := 0; i+1 < len(kv); i += 2 {
		r.Set(unwinders.Reg(kv[i]), kv[i+1])
	}
	return r
}

// The rules the sample firmware cannot reach yet (QEMU and the emulator
// model no MSPLIM/PSPLIM; no sample links Zephyr's sentinel check), each
// with the input that must not fire next to the one that must.
func TestRules(t *testing.T) {
	word := func(addr, v uint32) Memory {
		return func(a uint32, n int) ([]byte, bool) {
			if a != addr || n != 4 {
				return nil, false
			}
			b := make([]byte, 4)
			binary.LittleEndian.PutUint32(b, v)
			return b, true
		}
	}
	msp := uint32(unwinders.MSP)
	psp := uint32(unwinders.PSP)
	lr := uint32(unwinders.LR)
	for _, c := range []struct {
		name string
		in   Input
		want *Stack
	}{
		{"STKOF on PSP", Input{Profile: unwinders.V8M, SCB: fault.SCB{CFSR: fault.Known(1 << fault.STKOF)}, Regs: regs(lr, 0xFFFFFFFD, psp, 0x20001000)},
			&Stack{Overflow: true, Stack: "process", Evidence: []string{EvSTKOF, EvPSPLIM}}},
		{"STKOF is v8-M only", Input{Profile: unwinders.V7M, SCB: fault.SCB{CFSR: fault.Known(1 << fault.STKOF)}, Regs: regs(lr, 0xFFFFFFFD)}, nil},
		{"STKERR below the main stack", Input{Profile: unwinders.V7M, SCB: fault.SCB{CFSR: fault.Known(1 << fault.STKERR)}, Regs: regs(lr, 0xFFFFFFF9, msp, 0x20000ff0), MainStart: 0x20001000, MainStartHow: "__StackLimit"},
			&Stack{Overflow: true, Stack: "main", Evidence: []string{EvSTKERR, EvBelowStart}}},
		{"STKERR with SP inside the stack", Input{Profile: unwinders.V7M, SCB: fault.SCB{CFSR: fault.Known(1 << fault.STKERR)}, Regs: regs(lr, 0xFFFFFFF9, msp, 0x20001010), MainStart: 0x20001000}, nil},
		{"SP below the stack without a stacking error", Input{Profile: unwinders.V7M, SCB: fault.SCB{CFSR: fault.Known(1 << fault.PRECISERR)}, Regs: regs(lr, 0xFFFFFFF9, msp, 0x20000ff0), MainStart: 0x20001000}, nil},
		{"Zephyr sentinel destroyed", Input{Profile: unwinders.V7M, Kernel: "zephyr", ZephyrSentinel: true, Mem: word(0x20002000, 0x12345678),
			Threads: []rtos.Thread{{Name: "worker", Stack: rtos.Stack{Start: 0x20002000, End: 0x20002400, HighWaterBytes: -1}}}},
			&Stack{Overflow: true, Stack: "worker", Evidence: []string{EvSentinel}}},
		{"Zephyr sentinel intact", Input{Profile: unwinders.V7M, Kernel: "zephyr", ZephyrSentinel: true, Mem: word(0x20002000, zephyrSentinel),
			Threads: []rtos.Thread{{Name: "worker", Stack: rtos.Stack{Start: 0x20002000, End: 0x20002400, HighWaterBytes: -1}}}}, nil},
		{"no sentinel check linked", Input{Profile: unwinders.V7M, Kernel: "zephyr", Mem: word(0x20002000, 0),
			Threads: []rtos.Thread{{Name: "worker", Stack: rtos.Stack{Start: 0x20002000, End: 0x20002400, HighWaterBytes: -1}}}}, nil},
		{"FreeRTOS fill gone", Input{Profile: unwinders.V7M, Kernel: "freertos",
			Threads: []rtos.Thread{{Name: "t1", Stack: rtos.Stack{Start: 0x20002000, End: 0x20002100, SP: 0x20002040, HighWaterBytes: 0, Overflow: true}}}},
			&Stack{Overflow: true, Stack: "t1", Evidence: []string{EvFillPattern}}},
	} {
		got := Judge(c.in)
		if got != nil {
			got.Details = nil
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: %+v, want %+v", c.name, got, c.want)
		}
	}
}
