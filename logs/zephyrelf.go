package logs

import (
	"fmt"

	"github.com/faultline-dev/faultline/elfsym"
	"github.com/faultline-dev/faultline/unwinders"
)

// FindZephyr decodes Zephyr's deferred log buffer when the ELF has one:
// log_core.c's log_buffer (struct mpsc_pbuf_buffer) over its buf32
// storage. ok is false when the ELF has no such buffer (not Zephyr, or
// immediate/minimal logging, or log v1: a note says which).
//
// threadName names a thread (a struct k_thread address) when the dump's
// RTOS threads are known; nil otherwise.
func FindZephyr(elf *elfsym.File, mem unwinders.Memory, threadName func(uint32) (string, bool)) (l Log, ok bool, err error) {
	if elf == nil || mem == nil {
		return Log{}, false, nil
	}
	local := func(file, name string) (elfsym.SymbolRef, bool) {
		if s, ok := elf.FileSymbol(file, name); ok {
			return s, true
		}
		// Without STT_FILE symbols: a symbol of that name, only one.
		if a, ok := elf.Symbol(name); ok {
			if s, ok := elf.SymbolFor(a); ok && s.Start == a && s.Name == name {
				return s, true
			}
		}
		return elfsym.SymbolRef{}, false
	}
	ctl, ok1 := local("log_core.c", "log_buffer")
	data, ok2 := local("log_core.c", "buf32")
	if !ok1 || !ok2 {
		if _, v1 := elf.Symbol("log_msg_pool"); v1 {
			return Log{Source: "zephyr", Name: "log_msg_pool", Note: "Zephyr log v1 messages (log_msg_pool, before Zephyr 2.6 or CONFIG_LOG1) are not decoded"}, true, nil
		}
		return Log{}, false, nil
	}
	if data.Size < 4 || data.Size%4 != 0 {
		return Log{}, true, fmt.Errorf("Zephyr log buffer buf32 at 0x%08x has size %d: want a multiple of 4", data.Start, data.Size)
	}
	zb := ZephyrBuffer{Control: ctl.Start, Data: data.Start, Words: data.Size / 4, Dropped: -1}
	// The control block points at its storage: positive evidence that
	// these two symbols are the ring and its words.
	found := false
	for off := uint32(16); off < 64 && off+8 <= max(ctl.Size, 40); off += 4 {
		p, err1 := unwinders.ReadU32(mem, ctl.Start+off)
		n, err2 := unwinders.ReadU32(mem, ctl.Start+off+4)
		if err1 == nil && err2 == nil && p == data.Start && n == zb.Words {
			found = true
			break
		}
	}
	if !found {
		return Log{Source: "zephyr", Name: "log_buffer", Address: fmt.Sprintf("0x%08x", data.Start)}, true,
			fmt.Errorf("Zephyr log_buffer at 0x%08x does not point at buf32 (0x%08x, %d words) in the dump: not initialised, not captured, or not Zephyr's", ctl.Start, data.Start, zb.Words)
	}
	for _, n := range []string{"z_log_msg_finalize", "z_impl_z_log_msg_static_create", "z_log_msg_runtime_vcreate", "z_impl_z_log_msg_simple_create_0", "z_log_msg_commit"} {
		if _, ok := elf.Symbol(n); ok {
			zb.Version = 3
		}
	}
	for _, n := range []string{"z_log_msg2_finalize", "z_impl_z_log_msg2_static_create", "z_log_msg2_runtime_vcreate", "z_log_msg2_commit", "log_msg2_get_wlen"} {
		if _, ok := elf.Symbol(n); ok {
			zb.Version = 2
		}
	}
	if f, ok := local("log_output.c", "freq"); ok {
		if d, ok := local("log_output.c", "timestamp_div"); ok {
			fv, e1 := unwinders.ReadU32(mem, f.Start)
			dv, e2 := unwinders.ReadU32(mem, d.Start)
			if e1 == nil && e2 == nil {
				zb.Freq, zb.Div = fv, dv
			}
		}
	}
	if s, ok := local("log_core.c", "dropped_cnt"); ok {
		if v, err := unwinders.ReadU32(mem, s.Start); err == nil {
			zb.Dropped = int64(v)
		}
	}
	// The source areas: iterable sections since Zephyr 3.0
	// (_log_const_list_start), linker symbols before.
	for _, p := range []string{"_log_const_list_", "__log_const_"} {
		s, ok1 := elf.Symbol(p + "start")
		e, ok2 := elf.Symbol(p + "end")
		if ok1 && ok2 {
			zb.ConstStart, zb.ConstEnd = s, e
			break
		}
	}
	for _, p := range []string{"_log_dynamic_list_", "__log_dynamic_"} {
		s, ok1 := elf.Symbol(p + "start")
		e, ok2 := elf.Symbol(p + "end")
		if ok1 && ok2 {
			zb.DynStart, zb.DynEnd = s, e
			break
		}
	}
	// Read once per ELF (a batch decodes many dumps with one).
	dw, ok := elf.Memo("logs.zephyr.dwarf", func() any {
		dw, ok := readZDWARF(elf.DWARF())
		if !ok {
			return (*zDWARF)(nil)
		}
		return &dw
	}).(*zDWARF)
	if ok && dw != nil {
		zb.Layout, zb.ThreadNames = &dw.lay, dw.threadName
		zb.Version = 3
		if dw.lay.pkgBits == 10 {
			zb.Version = 2
		}
	}
	zb.ThreadName = threadName
	l, err = Zephyr(mem, zb)
	return l, true, err
}
