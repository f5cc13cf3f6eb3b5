package client_test

import (
	"bytes"
	"errors"
	"math/rand"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/faultline-dev/faultline/gdbserver/client"
	"github.com/faultline-dev/faultline/gdbserver/client/clienttest"
)

// serve runs s on a loopback TCP listener for one connection and returns
// a client connected to it.
func serve(t *testing.T, s *clienttest.Server) *client.Client {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		conn, err := l.Accept()
		if err != nil {
			return
		}
		s.Serve(conn)
	}()
	c, err := client.Dial(l.Addr().String(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	c.Timeout = 2 * time.Second
	t.Cleanup(func() { c.Close() })
	return c
}

func randomBytes(n int, seed int64) []byte {
	b := make([]byte, n)
	rand.New(rand.NewSource(seed)).Read(b)
	return b
}

// A small PacketSize: every m read's reply fits it, the data come back
// whole; no-ack mode is used when offered.
func TestSmallPacketSizeAndNoAck(t *testing.T) {
	ram := randomBytes(1000, 1)
	s := &clienttest.Server{PacketSize: 0x40, NoAck: true, Mem: []clienttest.Region{{Addr: 0x20000000, Data: ram}}}
	c := serve(t, s)
	if _, err := c.Handshake(); err != nil {
		t.Fatal(err)
	}
	if !c.NoAck() || c.PacketSize != 0x40 {
		t.Fatalf("no-ack %v, packet size %#x: want true, 0x40", c.NoAck(), c.PacketSize)
	}
	got, holes, err := c.ReadMemory(0x20000000, 1000, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(holes) != 0 || !bytes.Equal(got, ram) {
		t.Fatalf("holes %v, data equal %v", holes, bytes.Equal(got, ram))
	}
	if o := s.Oversized(); len(o) != 0 {
		t.Errorf("reads whose reply exceeds PacketSize: %q", o)
	}
	reads := 0
	for _, p := range s.Log() {
		if strings.HasPrefix(p, "m") {
			reads++
		}
	}
	if want := (1000 + 29) / 30; reads != want {
		t.Errorf("%d m reads, want %d (30 bytes each in 0x40-byte packets)", reads, want)
	}
}

// In ack mode a reply with a bad checksum is NAKed and sent again.
func TestAckModeBadChecksumIsRetried(t *testing.T) {
	ram := randomBytes(64, 2)
	s := &clienttest.Server{CorruptFirst: true, Mem: []clienttest.Region{{Addr: 0x20000000, Data: ram}}}
	c := serve(t, s)
	if _, err := c.Handshake(); err != nil {
		t.Fatal(err)
	}
	if c.NoAck() {
		t.Fatal("no-ack mode without the server offering it")
	}
	got, _, err := c.ReadMemory(0x20000000, 64, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, ram) {
		t.Fatal("data differ after a retried reply")
	}
}

// Error replies are holes, recorded, and the read goes on past them.
func TestErrorRepliesAreHoles(t *testing.T) {
	a, b := randomBytes(0x100, 3), randomBytes(0x100, 4)
	s := &clienttest.Server{PacketSize: 0x104, Mem: []clienttest.Region{{Addr: 0x20000000, Data: a}, {Addr: 0x20000200, Data: b}}}
	c := serve(t, s)
	if _, err := c.Handshake(); err != nil {
		t.Fatal(err)
	}
	got, holes, err := c.ReadMemory(0x20000000, 0x300, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(holes) != 1 || holes[0] != (client.Hole{Addr: 0x20000100, Size: 0x100, Reply: "E14"}) {
		t.Fatalf("holes %+v: want one at 0x20000100, 0x100 bytes, E14", holes)
	}
	if !bytes.Equal(got[:0x100], a) || !bytes.Equal(got[0x200:], b) {
		t.Fatal("the readable memory around the hole differs")
	}
}

// A server that drops the connection in the middle of a read: a clear
// error naming the command, ErrDisconnected.
func TestDroppedConnection(t *testing.T) {
	s := &clienttest.Server{PacketSize: 0x104, DropAfterReads: 3, Mem: []clienttest.Region{{Addr: 0x20000000, Data: make([]byte, 0x1000)}}}
	c := serve(t, s)
	if _, err := c.Handshake(); err != nil {
		t.Fatal(err)
	}
	_, _, err := c.ReadMemory(0x20000000, 0x1000, nil)
	if !errors.Is(err, client.ErrDisconnected) {
		t.Fatalf("error %v: want ErrDisconnected", err)
	}
	if !strings.Contains(err.Error(), "m20000100,80") {
		t.Errorf("error %q does not name the read in flight (m20000100,80)", err)
	}
}

// A server that never answers: ErrTimeout after the bounded retries.
func TestSilentServerTimesOut(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		conn, err := l.Accept()
		if err == nil {
			defer conn.Close()
			buf := make([]byte, 4096)
			for { // read everything, answer nothing
				if _, err := conn.Read(buf); err != nil {
					return
				}
			}
		}
	}()
	c, err := client.Dial(l.Addr().String(), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Timeout, c.Retries = 100*time.Millisecond, 2
	start := time.Now()
	_, err = c.Handshake()
	if !errors.Is(err, client.ErrTimeout) {
		t.Fatalf("error %v: want ErrTimeout", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("took %v: the retries are not bounded", d)
	}
}

// The target description: includes followed, regnum gaps kept, g read
// packed in number order, p for what g lacks.
func TestTargetDescriptionIncludesAndP(t *testing.T) {
	target := `<?xml version="1.0"?><!DOCTYPE target SYSTEM "gdb-target.dtd"><target><architecture>arm</architecture><xi:include href="core.xml"/><xi:include href="fp.xml"/></target>`
	core := `<?xml version="1.0"?><feature name="org.gnu.gdb.arm.m-profile">`
	for _, r := range []string{"r0", "r1", "r2", "r3", "r4", "r5", "r6", "r7", "r8", "r9", "r10", "r11", "r12", "sp", "lr", "pc"} {
		core += `<reg name="` + r + `" bitsize="32"/>`
	}
	core += `<reg name="xpsr" bitsize="32" regnum="25"/></feature>`
	fp := `<feature name="org.gnu.gdb.arm.m-system"><reg name="msp" bitsize="32" regnum="26"/><reg name="psp" bitsize="32"/></feature>`
	var g strings.Builder
	for i := 0; i < 16; i++ {
		g.WriteString(strings.Repeat("0", 6) + "1" + string("0123456789abcdef"[i]))
	}
	g.WriteString("00000001") // xpsr
	s := &clienttest.Server{
		PacketSize: 0x60, // the description comes in several chunks
		Features:   map[string]string{"target.xml": target, "core.xml": core, "fp.xml": fp},
		G:          g.String(),
		P:          map[int]string{26: "f0ff0020", 27: "xxxxxxxx"},
	}
	c := serve(t, s)
	if _, err := c.Handshake(); err != nil {
		t.Fatal(err)
	}
	d, err := c.TargetDescription()
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Annexes) != 3 {
		t.Errorf("annexes read %q: want target.xml, core.xml, fp.xml", d.Annexes)
	}
	x, _ := d.Lookup("xpsr")
	psp, _ := d.Lookup("psp")
	if x.Num != 25 || psp.Num != 27 {
		t.Errorf("xpsr at %d, psp at %d: want 25, 27", x.Num, psp.Num)
	}
	v, _, err := c.ReadRegisters(d, nil)
	if err != nil {
		t.Fatal(err)
	}
	if pc, _ := v.U32("pc"); pc != 0x1f000000 {
		t.Errorf("pc %#x: want 0x1f000000 (g, little-endian)", pc)
	}
	if xp, _ := v.U32("xpsr"); xp != 0x01000000 {
		t.Errorf("xpsr %#x: want 0x01000000 (packed after pc in g)", xp)
	}
	if m, ok := v.U32("msp"); !ok || m != 0x2000fff0 {
		t.Errorf("msp %#x %v: want 0x2000fff0 from p1a", m, ok)
	}
	if _, ok := v.U32("psp"); ok {
		t.Error("psp read as a value from an unavailable (xxxxxxxx) reply")
	}
}

// A hole inside one read chunk: the chunk is read again in HoleGrain
// pieces, so only the refused piece is lost.
func TestHoleInsideAChunk(t *testing.T) {
	a, b := randomBytes(0x300, 5), randomBytes(0x400, 6)
	s := &clienttest.Server{PacketSize: 0x2004, Mem: []clienttest.Region{{Addr: 0x20000000, Data: a}, {Addr: 0x20000400, Data: b}}}
	c := serve(t, s)
	if _, err := c.Handshake(); err != nil {
		t.Fatal(err)
	}
	got, holes, err := c.ReadMemory(0x20000000, 0x800, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(holes) != 1 || holes[0] != (client.Hole{Addr: 0x20000300, Size: 0x100, Reply: "E14"}) {
		t.Fatalf("holes %+v: want one at 0x20000300, 0x100 bytes", holes)
	}
	if !bytes.Equal(got[:0x300], a) || !bytes.Equal(got[0x400:], b) {
		t.Fatal("the readable memory around the hole differs")
	}
}
