package crashdump

import (
	"encoding/binary"

	"github.com/faultline-dev/faultline/unwinders"
)

// addrCPUID is the SCB's CPUID register (ARMv7-M ARM B3.2.3, ARMv6-M ARM
// B3.2.2, ARMv8-M ARM D1.2.4).
const addrCPUID = 0xE000ED00

// cpuParts maps CPUID.PARTNO (bits 15:4) of an Arm-implemented core
// (IMPLEMENTER 0x41) to faultline's CPU name (the Cortex-M TRMs' CPUID
// reset values).
var cpuParts = map[uint32]string{
	0xC20: "cortex-m0", 0xC60: "cortex-m0plus", 0xC21: "cortex-m1",
	0xC23: "cortex-m3", 0xC24: "cortex-m4", 0xC27: "cortex-m7",
	0xD20: "cortex-m23", 0xD21: "cortex-m33", 0xD31: "cortex-m35p",
	0xD22: "cortex-m55", 0xD23: "cortex-m85",
}

// CPUFromCPUID names the core from the CPUID word the dump's memory holds
// (the SCB at 0xE000ED00), and returns the word: "" when the dump has no
// such word or it names no Arm Cortex-M core.
func CPUFromCPUID(mem []unwinders.Region) (string, uint32) {
	for _, r := range mem {
		if r.Addr <= addrCPUID && uint64(addrCPUID)+4 <= r.End() && len(r.Data) > 0 {
			off := addrCPUID - r.Addr
			v := binary.LittleEndian.Uint32(r.Data[off : off+4])
			if v>>24 != 0x41 {
				return "", v
			}
			return cpuParts[v>>4&0xFFF], v
		}
	}
	return "", 0
}
