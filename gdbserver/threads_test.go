package gdbserver

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"path/filepath"
	"strings"
	"testing"

	"github.com/faultline-dev/faultline/crashdump"
	"github.com/faultline-dev/faultline/elfsym"
	"github.com/faultline-dev/faultline/unwinders"
)

func zephyrTarget(t testing.TB, build, dump string) *Target {
	t.Helper()
	root := filepath.Join("..")
	elf, err := elfsym.Open(filepath.Join(root, "firmware-samples", "rtos-zephyr", "build", build+".elf"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { elf.Close() })
	d, err := crashdump.Load(filepath.Join(root, "fixtures", "rtos-zephyr", dump))
	if err != nil {
		t.Fatal(err)
	}
	nMem, nSym := len(d.Memory), len(d.SymbolRegions)
	tg, err := NewTarget(d, elf)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Memory) != nMem || len(d.SymbolRegions) != nSym {
		t.Fatal("NewTarget changed the caller's dump")
	}
	return tg
}

// TestThreadPackets checks the thread packets on the gcc-m3-O2 Zephyr
// kernel's coredump: ids, liveness, extra info, per-session selection,
// and per-thread registers equal to the thread's saved context.
func TestThreadPackets(t *testing.T) {
	tg := zephyrTarget(t, "gcc-m3-O2", "gcc-m3-O2.zephyr.log")
	if len(tg.threads) != 8 {
		t.Fatalf("%d threads, want 8: %s", len(tg.threads), tg.threadReport())
	}
	var a, b selection
	rpc := func(sel *selection, pkt string) string {
		return string(tg.dispatchIn(sel, []byte(pkt), DefaultMaxPacket).data)
	}
	for _, tc := range []struct{ in, want string }{
		{"qfThreadInfo", "m1,2,3,4,5,6,7,8"},
		{"qsThreadInfo", "l"},
		{"qC", "QC1"},
		{"?", "T0bthread:1;"},
		{"T1", "OK"}, {"T8", "OK"}, {"T9", "E01"}, {"T0", "E01"}, {"Tp1.3", "OK"}, {"Tzz", "E01"},
		{"Hg9", "E01"}, {"Hc-1", "OK"}, {"Hg3", "OK"},
	} {
		if got := rpc(&a, tc.in); got != tc.want && !(tc.in == "?" && strings.HasPrefix(got, "T")) {
			t.Errorf("%s: %q, want %q", tc.in, got, tc.want)
		}
	}
	extra, _ := hex.DecodeString(rpc(&a, "qThreadExtraInfo,2"))
	if !strings.HasPrefix(string(extra), "consumer, blocked (sem_data (0x") {
		t.Errorf("extra info of thread 2: %q", extra)
	}
	xml := string(tg.threadsXML())
	if strings.Count(xml, "<thread ") != 8 || !strings.Contains(xml, `name="net_rx"`) {
		t.Errorf("threads XML:\n%s", xml)
	}
	// Session a reads thread 3, session b still thread 1.
	pc := func(sel *selection) uint32 {
		raw, err := hex.DecodeString(rpc(sel, "pf"))
		if err != nil || len(raw) != 4 {
			t.Fatalf("pf: %q", raw)
		}
		return binary.LittleEndian.Uint32(raw)
	}
	if got, want := pc(&a), tg.threads[2].regs.Value(unwinders.PC); got != want {
		t.Errorf("thread 3 pc 0x%x, want 0x%x", got, want)
	}
	if got, want := pc(&b), tg.threads[0].regs.Value(unwinders.PC); got != want {
		t.Errorf("thread 1 pc 0x%x, want 0x%x", got, want)
	}
	if g := rpc(&a, "g"); len(g) != 8*23 || g == rpc(&b, "g") {
		t.Errorf("g of thread 3 (%d hex digits) equals thread 1's or has the wrong size", len(g))
	}
	// A long list is sent in pieces.
	many := &Target{threads: make([]thread, 2*maxThreadIDs+1)}
	var s selection
	first := string(many.dispatchIn(&s, []byte("qfThreadInfo"), DefaultMaxPacket).data)
	second := string(many.dispatchIn(&s, []byte("qsThreadInfo"), DefaultMaxPacket).data)
	third := string(many.dispatchIn(&s, []byte("qsThreadInfo"), DefaultMaxPacket).data)
	last := string(many.dispatchIn(&s, []byte("qsThreadInfo"), DefaultMaxPacket).data)
	if strings.Count(first, ",") != maxThreadIDs-1 || !strings.HasPrefix(second, "m41,") || third != "m81" || last != "l" {
		t.Errorf("pieces %q %q %q %q", first[:8], second[:8], third, last)
	}
}

// TestThreadsWithoutRTOS keeps the single crash-dump thread for firmware
// without a kernel.
func TestThreadsWithoutRTOS(t *testing.T) {
	root := filepath.Join("..")
	elf, err := elfsym.Open(filepath.Join(root, "firmware-samples", "build", "gcc-m3-O2.elf"))
	if err != nil {
		t.Fatal(err)
	}
	defer elf.Close()
	d, err := crashdump.Load(filepath.Join(root, "fixtures", "qemu", "gcc-m3-O2-udf.json"))
	if err != nil {
		t.Fatal(err)
	}
	tg, err := NewTarget(d, elf)
	if err != nil {
		t.Fatal(err)
	}
	var sel selection
	if got := string(tg.dispatchIn(&sel, []byte("qfThreadInfo"), DefaultMaxPacket).data); got != "m1" {
		t.Errorf("qfThreadInfo: %q", got)
	}
	if !strings.HasPrefix(tg.threadReport(), "no RTOS found") {
		t.Errorf("monitor threads: %q", tg.threadReport())
	}
}

// FuzzThreadPackets sends sequences of packets (one per line) to the
// 8-thread Zephyr coredump's target in one session state, with the
// smallest packet size: thread selection, listing and per-thread
// registers must never panic, and every reply must fit the packet size.
func FuzzThreadPackets(f *testing.F) {
	for _, s := range []string{
		"qfThreadInfo\nqsThreadInfo\nqsThreadInfo", "Hg3\ng\np0f\nHg0\ng", "Hgp1.8\nqThreadExtraInfo,8",
		"T8\nT9\nTffffffff\nHg-1\nHc5", "qXfer:threads:read::0,40\nqXfer:threads:read::40,40",
		"qRcmd,74687265616473", "Hg8\np30\np1a\ng", "Hgp2.3\nHgp1.", "qThreadExtraInfo,0\nqThreadExtraInfo,p1.2",
	} {
		f.Add([]byte(s))
	}
	tg := zephyrTarget(f, "gcc-m3-O2", "gcc-m3-O2.zephyr.log")
	f.Fuzz(func(t *testing.T, data []byte) {
		var sel selection
		lines := bytes.Split(data, []byte("\n"))
		if len(lines) > 64 {
			lines = lines[:64]
		}
		for _, pkt := range lines {
			r := tg.dispatchIn(&sel, pkt, minPacket)
			if esc := Escape(nil, r.data); len(esc) > minPacket {
				t.Fatalf("reply to %q: %d bytes escaped, more than %d", pkt, len(esc), minPacket)
			}
			if sel.g < 0 || sel.g >= len(tg.threads) || sel.listed < 0 || sel.listed > len(tg.threads) {
				t.Fatalf("after %q: selection %+v out of range", pkt, sel)
			}
		}
	})
}
