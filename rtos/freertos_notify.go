package rtos

import (
	"github.com/faultline-dev/faultline/elfsym"
	"github.com/faultline-dev/faultline/unwinders"
	"github.com/faultline-dev/faultline/unwinders/thumb"
)

// The task-notification wait functions of FreeRTOS (V10.4 and later, and
// before). A firmware without any of them has no task that waits on a
// notification.
var notifyWaitFuncs = []string{"ulTaskGenericNotifyTake", "xTaskGenericNotifyWait", "ulTaskNotifyTake", "xTaskNotifyWait"}

// notifyScan is where the kernel's own code keeps a task's notification
// state, read from the wait functions when the debug types are gone.
type notifyScan struct {
	present bool // a wait function exists
	off, n  int  // ucNotifyState[0]'s offset in the TCB and the array's length; off -1 unknown
}

// scanNotify finds ucNotifyState in the code of the notification wait
// functions: the byte store of taskWAITING_NOTIFICATION (1) through the
// task pointer is ucNotifyState[index] (its constant offset, whatever
// register holds the index), and the word load from the largest constant
// offset below it is ulNotifiedValue[index], the array just before it:
// their distance is the array length. Every function that has both must
// agree; no candidate or a disagreement leaves the offset unknown.
func scanNotify(f *elfsym.File) notifyScan {
	res := notifyScan{off: -1}
	code := new(unwinders.Image)
	if err := code.AddLayer(f.Segments()...); err != nil {
		return res
	}
	for _, name := range notifyWaitFuncs {
		a, ok := f.Symbol(name)
		if !ok {
			continue
		}
		res.present = true
		fn, ok := f.FuncAt(a &^ 1)
		if !ok || fn.End <= fn.Start || fn.End-fn.Start > 4096 {
			return notifyScan{present: true, off: -1}
		}
		st, val, ok := scanNotifyFunc(code, fn.Start, fn.End)
		if !ok {
			continue
		}
		n := (st - val) / 4
		if n < 1 || n > 16 || (st-val)%4 != 0 {
			return notifyScan{present: true, off: -1}
		}
		if res.off >= 0 && (res.off != st || res.n != n) {
			return notifyScan{present: true, off: -1}
		}
		res.off, res.n = st, n
	}
	return res
}

// scanNotifyFunc decodes [start, end) tracking each register's constant
// part (a known constant, or an unknown base plus a constant): it returns
// the single offset a constant 1 is stored to as a byte and the largest
// word-load offset below it.
func scanNotifyFunc(code unwinders.Memory, start, end uint32) (store, load int, ok bool) {
	type rv struct {
		isConst bool  // the whole value is c
		c       int64 // the constant part
	}
	var r [16]rv
	stores := map[int64]bool{}
	var loads []int64
	d := thumb.NewDecoder(code, start, end)
	var in thumb.Inst
	for i := 0; i < 2048 && d.Next(&in) == nil; i++ {
		get := func(x unwinders.Reg) rv {
			if x < 16 {
				return r[x]
			}
			return rv{}
		}
		set := func(x unwinders.Reg, v rv) {
			if x < 16 {
				r[x] = v
			}
		}
		if in.Flags&thumb.FlagInIT != 0 && in.Cond != thumb.AL {
			for k := 0; k < 16; k++ {
				if in.Writes&(1<<k) != 0 {
					r[k] = rv{}
				}
			}
			continue
		}
		raw := in.Raw
		switch {
		case in.Op == thumb.OpMOV && in.Flags&thumb.FlagImm != 0, in.Op == thumb.OpMOVW:
			set(in.Rd, rv{isConst: true, c: int64(uint32(in.Imm))})
		case in.Op == thumb.OpMOV && in.Rm < 16:
			v := get(in.Rm)
			switch in.Shift {
			case thumb.LSL:
				v.c <<= in.ShiftN
			default:
				if in.ShiftN != 0 {
					v = rv{}
				}
			}
			set(in.Rd, v)
		case in.Op == thumb.OpADD || in.Op == thumb.OpSUB || in.Op == thumb.OpADDW || in.Op == thumb.OpSUBW:
			a := get(in.Rn)
			var b rv
			if in.Flags&thumb.FlagImm != 0 || in.Op == thumb.OpADDW || in.Op == thumb.OpSUBW {
				b = rv{isConst: true, c: int64(in.Imm)}
			} else {
				b = get(in.Rm)
				if in.Shift == thumb.LSL {
					b.c <<= in.ShiftN
				} else if in.ShiftN != 0 {
					b = rv{}
				}
			}
			if in.Op == thumb.OpSUB || in.Op == thumb.OpSUBW {
				b.c = -b.c
			}
			set(in.Rd, rv{isConst: a.isConst && b.isConst, c: a.c + b.c})
		case in.Op == thumb.OpLDR:
			if in.Index == thumb.Offset {
				loads = append(loads, get(in.Rn).c+int64(in.Imm))
			}
			set(in.Rd, rv{})
			if in.Index != thumb.Offset {
				set(in.Rn, rv{})
			}
		case in.Op == thumb.OpOther && in.Len == 2 && raw&0xF800 == 0 && raw>>6&31 != 0: // LSL (immediate) T1
			v := r[raw>>3&7]
			v.c <<= raw >> 6 & 31
			r[raw&7] = v
		case in.Len == 2 && raw&0xFE00 == 0x5800: // LDR (register) T1
			loads = append(loads, r[raw>>3&7].c+r[raw>>6&7].c)
			r[raw&7] = rv{}
		case in.Len == 4 && raw>>20 == 0xF85 && raw&0xFC0 == 0 && raw>>16&15 != 15: // LDR (register) T2
			loads = append(loads, r[raw>>16&15].c+r[raw&15].c<<(raw>>4&3))
			r[raw>>12&15] = rv{}
		case in.Len == 2 && raw&0xF800 == 0x7000: // STRB (immediate) T1
			rt, rn, imm := unwinders.Reg(raw&7), unwinders.Reg(raw>>3&7), int64(raw>>6&31)
			if v := r[rt]; v.isConst && v.c == 1 && !r[rn].isConst {
				stores[r[rn].c+imm] = true
			}
		case in.Len == 2 && raw&0xFE00 == 0x5400: // STRB (register) T1
			rt, rn, rm := unwinders.Reg(raw&7), unwinders.Reg(raw>>3&7), unwinders.Reg(raw>>6&7)
			if v := r[rt]; v.isConst && v.c == 1 {
				stores[r[rn].c+r[rm].c] = true
			}
		case in.Len == 4 && raw>>20 == 0xF88: // STRB.W (immediate) T2
			rt, rn, imm := unwinders.Reg(raw>>12&15), unwinders.Reg(raw>>16&15), int64(raw&0xFFF)
			if rt < 16 && rn < 13 {
				if v := r[rt]; v.isConst && v.c == 1 && !r[rn].isConst {
					stores[r[rn].c+imm] = true
				}
			}
		default:
			for k := 0; k < 16; k++ {
				if in.Writes&(1<<k) != 0 {
					r[k] = rv{}
				}
			}
		}
		if in.IsCall() {
			for _, k := range []int{0, 1, 2, 3, 12, 14} {
				r[k] = rv{}
			}
		}
	}
	if len(stores) != 1 {
		return 0, 0, false
	}
	for s := range stores {
		store = int(s)
	}
	load = -1
	for _, l := range loads {
		if l >= 52 && l < int64(store) && int(l) > load && (int64(store)-l)%4 == 0 {
			load = int(l)
		}
	}
	if store < 56 || store > 1024 || load < 0 {
		return 0, 0, false
	}
	return store, load, true
}
