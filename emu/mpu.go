package emu

import "github.com/faultline-dev/faultline/emu/uc"

// The MPU model: PMSAv7 on ARMv7-M (ARMv7-M ARM B3.5: MPU_CTRL, MPU_RNR,
// MPU_RBAR, MPU_RASR with SIZE, SRD, AP and XN, and the RBAR_An/RASR_An
// aliases) and PMSAv8 on ARMv8-M (ARMv8-M ARM B3.5 and D1.2: MPU_RBAR with
// AP/XN, MPU_RLAR with LIMIT/EN, the RBAR_An/RLAR_An aliases of regions
// MPU_RNR[7:2]:n; MPU_MAIR0/1 are stored only). Unlike PMSAv7, PMSAv8
// regions have no priority: an address that lies in two or more enabled
// regions is a MemManage fault whatever their attributes.
//
// How it is enforced: Unicorn maps memory in 1 KiB pages and cannot give a
// 32-byte region its own permissions, so the MPU is modelled by the harness:
//
//   - a data access that Unicorn rejects (a store to read-only flash, an
//     unmapped address) is a MemManage DACCVIOL with MMFAR when the MPU
//     denies it, else a BusFault as before. On the sample firmware a NULL
//     store hits the 32-byte no-access region at 0, which lies in flash:
//     MemManage, escalated to HardFault (CFSR 0x82, MMFAR 0), as in QEMU.
//   - an instruction fetch that fails (unmapped, execute-protected, or a
//     branch with the Thumb bit clear) at an address the MPU makes
//     execute-never is a MemManage IACCVIOL: the MPU check comes before the
//     EPSR.T check, which is why QEMU reports IACCVIOL, not INVSTATE, for a
//     call through a NULL function pointer when address 0 is guarded.
//   - accesses Unicorn allows but the MPU denies (a NULL read from readable
//     flash, a store into a read-only region inside RAM, an unprivileged
//     access to a privileged-only region, executing code in an XN region of
//     executable memory) are caught by the C checks of checks.go and
//     emu/uc/check.c while the MPU is enabled: MemManage DACCVIOL+MMARVALID
//     (MMFAR) or IACCVIOL.
//   - exception entry stacking checks each word against the MPU and the
//     memory map (exception.go): MSTKERR or STKERR.

type mpuAccess int

const (
	mpuRead mpuAccess = iota
	mpuWrite
	mpuFetch
)

// MPU_CTRL bits (B3.5.5).
const (
	mpuEnable     = 1 << 0
	mpuHFNMIENA   = 1 << 1
	mpuPRIVDEFENA = 1 << 2
)

// privileged reports whether the core runs privileged: Handler mode or
// CONTROL.nPRIV clear (B1.4.4).
func (m *machine) privileged() bool {
	if m.reg(uc.RegXPSR)&0x1ff != 0 {
		return true
	}
	return m.reg(uc.RegCONTROL)&controlPriv == 0
}

// mpuDenied reports whether the MPU, as the firmware programmed it, denies
// an access of the given kind at addr for the current privilege and
// execution priority.
func (m *machine) mpuDenied(addr uint32, kind mpuAccess) bool {
	return m.mpuDeniedFor(addr, kind, m.privileged())
}

// mpuDeniedFor is mpuDenied for the given privilege.
func (m *machine) mpuDeniedFor(addr uint32, kind mpuAccess, priv bool) bool {
	s := &m.scs
	if m.cpu.v6m || s.MPUCtrl&mpuEnable == 0 {
		return false
	}
	if s.MPUCtrl&mpuHFNMIENA == 0 && m.execPriority() < 0 {
		return false // the MPU is off in HardFault, NMI and with FAULTMASK
	}
	return s.mpuDeniedPriv(addr, kind, priv)
}

// mpuDeniedPriv is the MPU's decision for an access at addr with the given
// privilege, whatever the execution priority.
func (s *SCS) mpuDeniedPriv(addr uint32, kind mpuAccess, priv bool) bool {
	if s.v6m || s.MPUCtrl&mpuEnable == 0 {
		return false
	}
	var ap uint32
	var xn, hit bool
	if s.v8m {
		var multi bool
		ap, xn, hit, multi = s.mpuLookupV8(addr)
		if multi {
			return true
		}
		if !hit {
			return !(priv && s.MPUCtrl&mpuPRIVDEFENA != 0)
		}
		if kind == mpuFetch && xn {
			return true
		}
		// AP[2:1]: 00 RW privileged, 01 RW any, 10 RO privileged, 11 RO any.
		if !priv && ap&1 == 0 {
			return true
		}
		return kind == mpuWrite && ap&2 != 0
	}
	ap, xn, hit = s.mpuLookupV7(addr)
	if !hit {
		return !(priv && s.MPUCtrl&mpuPRIVDEFENA != 0)
	}
	if kind == mpuFetch && xn {
		return true
	}
	// AP (B3.5.9, table B3-15).
	var r, w bool
	switch ap {
	case 0b001:
		r, w = priv, priv
	case 0b010:
		r, w = true, priv
	case 0b011:
		r, w = true, true
	case 0b101:
		r = priv
	case 0b110, 0b111:
		r = true
	}
	if kind == mpuWrite {
		return !w
	}
	return !r
}

// mpuLookupV7 finds the highest-numbered enabled PMSAv7 region that
// contains addr and whose subregion is not disabled.
func (s *SCS) mpuLookupV7(addr uint32) (ap uint32, xn, hit bool) {
	for n := len(s.MPURASR) - 1; n >= 0; n-- {
		rasr := s.MPURASR[n]
		if rasr&1 == 0 {
			continue
		}
		sizeField := (rasr >> 1) & 0x1f
		if sizeField < 4 {
			continue // UNPREDICTABLE below 32 bytes
		}
		size := uint64(1) << (sizeField + 1)
		base := uint64(s.MPURBAR[n]) &^ (size - 1)
		a := uint64(addr)
		if a < base || a >= base+size {
			continue
		}
		if size >= 256 {
			sub := (a - base) / (size / 8)
			if rasr>>(8+sub)&1 != 0 {
				continue // subregion disabled: the next region decides
			}
		}
		return (rasr >> 24) & 7, rasr&(1<<28) != 0, true
	}
	return 0, false, false
}

// mpuLookupV8 finds the PMSAv8 region that contains addr. Regions must not
// overlap: an address that matches two or more enabled regions is a
// MemManage fault for every access (ARMv8-M ARM B3.5, the MPUCheck()
// pseudocode; QEMU's get_phys_addr_pmsav8 does the same), so multi reports
// it and the caller denies the access.
func (s *SCS) mpuLookupV8(addr uint32) (ap uint32, xn, hit, multi bool) {
	for n := range s.MPURASR {
		rlar := s.MPURASR[n]
		if rlar&1 == 0 {
			continue
		}
		base := s.MPURBAR[n] &^ 0x1f
		limit := rlar | 0x1f
		if addr >= base && addr <= limit {
			if hit {
				return 0, false, true, true
			}
			rbar := s.MPURBAR[n]
			ap, xn, hit = (rbar>>1)&3, rbar&1 != 0, true
		}
	}
	return ap, xn, hit, false
}
