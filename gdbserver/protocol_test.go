package gdbserver

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/faultline-dev/faultline/crashdump"
	"github.com/faultline-dev/faultline/crashdump/fault"
	"github.com/faultline-dev/faultline/unwinders"
)

// testDump is a small hand-made dump: some registers unknown, FP registers
// s0-s3 only (so d0 and d1 are known, d2-d15 not), 256 bytes of RAM at
// 0x20000000 over a 64-byte "flash" region at 0x08000000 and a RAM region
// that hides part of a second flash region.
func testDump() (*crashdump.Dump, []unwinders.Region) {
	d := &crashdump.Dump{Path: "test.json", CPU: "cortex-m4"}
	for i := 0; i <= 12; i++ {
		if i != 7 { // r7 unknown
			d.Regs.Set(unwinders.R0+unwinders.Reg(i), uint32(0x100+i))
		}
	}
	d.Regs.Set(unwinders.SP, 0x20000080)
	d.Regs.Set(unwinders.LR, 0xfffffff9)
	d.Regs.Set(unwinders.PC, 0x08000010)
	d.Regs.Set(unwinders.XPSR, 0x01000003)
	d.Regs.Set(unwinders.MSP, 0x20000080)
	d.Regs.Set(unwinders.CONTROL, 0)
	for i := 0; i < 4; i++ {
		d.Regs.Set(unwinders.S(i), 0x3f800000+uint32(i))
	}
	d.Regs.Set(unwinders.FPSCR, 0x10)
	d.Fault = fault.SCB{CFSR: fault.Known(1 << 25), HFSR: fault.Known(1 << 30)} // DIVBYZERO, FORCED
	ram := make([]byte, 256)
	for i := range ram {
		ram[i] = byte(i)
	}
	d.Memory = []unwinders.Region{
		{Name: "ram", Addr: 0x20000000, Data: ram},
		{Name: "over-flash", Addr: 0x08000100, Data: bytes.Repeat([]byte{0xee}, 16)},
	}
	flash := []unwinders.Region{
		{Name: "flash", Addr: 0x08000000, Data: bytes.Repeat([]byte{0xaa}, 64)},
		{Name: "flash2", Addr: 0x080000f0, Data: bytes.Repeat([]byte{0xbb}, 64)},
	}
	return d, flash
}

// testTarget builds the target of testDump without an ELF file: the
// flash regions form the bottom layer as an ELF's segments would.
func testTarget(t testing.TB) *Target {
	t.Helper()
	d, flash := testDump()
	tg, err := NewTarget(d, nil)
	if err != nil {
		t.Fatal(err)
	}
	im := new(unwinders.Image)
	if err := im.AddLayer(flash...); err != nil {
		t.Fatal(err)
	}
	if err := im.AddLayer(d.Memory...); err != nil {
		t.Fatal(err)
	}
	tg.mem = im
	tg.memmap = memoryMapXML(flash, d.Memory)
	return tg
}

// client is a fake GDB on one end of a net.Pipe.
type client struct {
	t     *testing.T
	c     net.Conn
	r     *bufio.Reader
	noAck bool
	done  chan error // ServeConn's result
}

func newClient(t *testing.T, cfg Config) *client {
	t.Helper()
	a, b := net.Pipe()
	srv := NewServer(testTarget(t), cfg)
	c := &client{t: t, c: a, r: bufio.NewReader(a), done: make(chan error, 1)}
	go func() {
		c.done <- srv.ServeConn(context.Background(), b)
		b.Close()
	}()
	t.Cleanup(func() { a.Close() })
	a.SetDeadline(time.Now().Add(10 * time.Second))
	return c
}

// sendRaw writes bytes as they are.
func (c *client) sendRaw(s string) {
	c.t.Helper()
	if _, err := c.c.Write([]byte(s)); err != nil {
		c.t.Fatalf("write %q: %v", s, err)
	}
}

// packet frames data with a correct checksum, without escaping.
func packet(data string) string {
	return fmt.Sprintf("$%s#%02x", data, Checksum([]byte(data)))
}

// expectAck reads the '+' the server sends in ack mode.
func (c *client) expectAck() {
	c.t.Helper()
	if c.noAck {
		return
	}
	b, err := c.r.ReadByte()
	if err != nil || b != '+' {
		c.t.Fatalf("want ack '+', got %q (%v)", b, err)
	}
}

// recv reads one packet, checks its checksum, acks it and returns its
// data unescaped.
func (c *client) recv() string {
	c.t.Helper()
	b, err := c.r.ReadByte()
	if err != nil || b != '$' {
		c.t.Fatalf("want '$', got %q (%v)", b, err)
	}
	body, err := c.r.ReadBytes('#')
	if err != nil {
		c.t.Fatal(err)
	}
	body = body[:len(body)-1]
	var sum [2]byte
	if _, err := io.ReadFull(c.r, sum[:]); err != nil {
		c.t.Fatal(err)
	}
	if want := fmt.Sprintf("%02x", Checksum(body)); string(sum[:]) != want {
		c.t.Fatalf("reply %q: checksum %s, want %s", body, sum, want)
	}
	if !c.noAck {
		c.sendRaw("+")
	}
	data, err := Unescape(body)
	if err != nil {
		c.t.Fatal(err)
	}
	return string(data)
}

// last sends a packet that ends the session (D, vKill) and returns its
// reply, read without an ack: the server may close the link right after
// replying, and over net.Pipe an ack written then fails (GDB ignores it).
func (c *client) last(data string) string {
	c.t.Helper()
	c.sendRaw(packet(data))
	c.expectAck()
	raw := c.recvNoAck()
	if want := packet(strings.TrimSuffix(strings.TrimPrefix(raw[:len(raw)-3], "$"), "#")); raw != want {
		c.t.Fatalf("reply %q: bad framing or checksum", raw)
	}
	return raw[1 : len(raw)-3]
}

// rpc sends a packet and returns the reply.
func (c *client) rpc(data string) string {
	c.t.Helper()
	c.sendRaw(packet(data))
	c.expectAck()
	return c.recv()
}

// wait returns ServeConn's result.
func (c *client) wait() error {
	c.t.Helper()
	select {
	case err := <-c.done:
		return err
	case <-time.After(10 * time.Second):
		c.t.Fatal("the session did not end")
	}
	return nil
}

func TestFrameAndChecksum(t *testing.T) {
	if got := string(Frame([]byte("OK"))); got != "$OK#9a" {
		t.Errorf("Frame(OK) = %q", got)
	}
	if got := string(Frame(nil)); got != "$#00" {
		t.Errorf("Frame(empty) = %q", got)
	}
	// '#', '$', '}' and '*' are escaped as '}' + byte^0x20 and the
	// checksum covers the escaped bytes.
	got := string(Frame([]byte("a#b$c}d*e")))
	body := "a}\x03b}\x04c}]d}\x0ae"
	if want := fmt.Sprintf("$%s#%02x", body, Checksum([]byte(body))); got != want {
		t.Errorf("Frame escapes: got %q, want %q", got, want)
	}
	raw := []byte{0, '#', '$', '}', '*', 0xff, 0x7d, 0x20}
	back, err := Unescape(Escape(nil, raw))
	if err != nil || !bytes.Equal(back, raw) {
		t.Errorf("Unescape(Escape(%x)) = %x, %v", raw, back, err)
	}
	if _, err := Unescape([]byte("ab}")); !errors.Is(err, ErrMalformed) {
		t.Errorf("Unescape of a trailing escape: %v", err)
	}
}

func TestExpandRLE(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		err      bool
	}{
		{"abc", "abc", false},
		{"0* ", "0000", false},                           // ' ' = 32: 3 more
		{"x*!y", "xxxxxy", false},                        // '!' = 33: 4 more
		{"}\x0a*\"", "}\x0a\x0a\x0a\x0a\x0a\x0a", false}, // the escaped byte is repeated
		{"*a", "", true},                                 // nothing to repeat
		{"a*", "", true},                                 // no count
		{"a*\x1f", "", true},                             // count below ' '
		{"a*#", "", true},                                // '#' is not a count
		{"a*~~", "", true},                               // '~' = 126: 97 more, past the 64-byte limit
	} {
		got, err := ExpandRLE([]byte(tc.in), 64)
		if tc.err {
			if !errors.Is(err, ErrMalformed) {
				t.Errorf("ExpandRLE(%q) = %q, %v: want an error", tc.in, got, err)
			}
			continue
		}
		if err != nil || string(got) != tc.want {
			t.Errorf("ExpandRLE(%q) = %q, %v: want %q", tc.in, got, err, tc.want)
		}
	}
}

func feedAll(p *parser, s string) []event {
	var out []event
	for i := 0; i < len(s); i++ {
		ev := p.feed(s[i])
		if ev.kind != evNone {
			ev.data = append([]byte(nil), ev.data...)
			out = append(out, ev)
		}
	}
	return out
}

func TestParser(t *testing.T) {
	p := newParser(16)
	kinds := func(evs []event) string {
		var s []string
		for _, e := range evs {
			if e.kind == evPacket {
				s = append(s, "packet:"+string(e.data))
			} else {
				s = append(s, e.kind.String())
			}
		}
		return strings.Join(s, ",")
	}
	for _, tc := range []struct{ in, want string }{
		{"+-\x03", "ack,nak,interrupt"},
		{packet("g"), "packet:g"},
		{"$g#67", "packet:g"},
		{"$g#6F", "bad checksum"},   // upper-case hex is accepted, the sum is wrong
		{"$g#zz", "bad checksum"},   // not hex
		{"$m0,4#FD", "packet:m0,4"}, // upper-case checksum
		{"junk" + packet("?"), "packet:?"},
		{"$abc$" + packet("s"), "packet:s"}, // a '$' inside a packet restarts it
		{packet(strings.Repeat("a", 17)), "oversized packet"},
		{packet(strings.Repeat("a", 16)), "packet:" + strings.Repeat("a", 16)},
		{"$" + strings.Repeat("a", 17) + "#00", "bad checksum"},
	} {
		if got := kinds(feedAll(p, tc.in)); got != tc.want {
			t.Errorf("feed %q: %s, want %s", tc.in, got, tc.want)
		}
	}
	// Line noise past 4*max bytes is reported once the limit is crossed.
	if got := kinds(feedAll(newParser(16), strings.Repeat("x", 65))); got != "line noise" {
		t.Errorf("noise: %s", got)
	}
	if got := kinds(feedAll(newParser(16), "$"+strings.Repeat("x", 16+65))); got != "line noise" {
		t.Errorf("endless packet: %s", got)
	}
}

func TestSession(t *testing.T) {
	c := newClient(t, Config{})
	if got := c.rpc("qSupported:multiprocess+;swbreak+;hwbreak+;qRelocInsn+;fork-events+;vfork-events+;exec-events+;vContSupported+;QThreadEvents+;no-resumed+;memory-tagging+"); got != "PacketSize=4000;qXfer:features:read+;qXfer:memory-map:read+;qXfer:threads:read+;QStartNoAckMode+" {
		t.Errorf("qSupported: %q", got)
	}
	for _, tc := range []struct{ in, want string }{
		{"vMustReplyEmpty", ""},
		{"Hg0", "OK"},
		{"Hc-1", "OK"},
		{"Hg1", "OK"},
		{"Hg2", "E01"},
		{"Hx1", "E01"},
		{"qTStatus", ""},
		{"?", "T08thread:1;"}, // DIVBYZERO: SIGFPE
		{"qfThreadInfo", "m1"},
		{"qsThreadInfo", "l"},
		{"qC", "QC1"},
		{"T1", "OK"},
		{"T2", "E01"},
		{"qAttached", "1"},
		{"qAttached:1", "1"},
		{"qOffsets", "Text=0;Data=0;Bss=0"},
		{"qSymbol::", "OK"},
		{"qThreadExtraInfo,1", string(hexText("crash dump, HardFault"))},
		{"vCont?", ""},
		{"vCont;c", "E01"},
		{"vRun;", "E01"},
		{"vFlashErase:0,100", "E01"},
		{"!", ""},
		{"", ""},
		// registers
		{"p0", "00010000"},
		{"p7", "xxxxxxxx"}, // r7 unknown
		{"pd", "80000020"}, // sp
		{"pf", "10000008"}, // pc
		{"p19", "03000001"},
		{"p1a", "80000020"},
		{"p1b", "xxxxxxxx"}, // psp unknown
		{"p1f", "00000000"}, // control
		{"p20", "0000803f0100803f"},
		{"p21", "0200803f0300803f"},
		{"p22", "xxxxxxxxxxxxxxxx"}, // s4, s5 unknown
		{"p30", "10000000"},
		{"p10", "E01"}, // FPA registers do not exist
		{"p31", "E01"},
		{"pffffffff", "E01"},
		{"p", "E01"},
		{"pxyz", "E01"},
		// memory: dump RAM above flash, partial reads, holes
		{"m20000000,4", "00010203"},
		{"m200000fe,4", "feff"},    // partial: only the readable prefix
		{"m20000100,4", "E01"},     // unmapped
		{"m8000000,2", "aaaa"},     // flash
		{"m80000fe,4", "bbbbeeee"}, // flash2 under over-flash: the dump wins
		{"m8000110,2", "bbbb"},
		{"m20000000,0", ""},
		{"mffffffff,10", "E01"},
		{"m100000000,4", "E01"},
		{"m20000000", "E01"},
		{"mzz,4", "E01"},
		// read-only: writes, execution, breakpoints
		{"G00", "E01"},
		{"P0=00000000", "E01"},
		{"M20000000,1:00", "E01"},
		{"X20000000,1:\x00", "E01"},
		{"c", "E01"},
		{"s", "E01"},
		{"C0b", "E01"},
		{"Z0,8000010,2", ""},
		{"z0,8000010,2", ""},
		{"Z2,20000000,4", ""},
		// qXfer errors
		{"qXfer:features:read:other.xml:0,100", "E00"},
		{"qXfer:memory-map:read:x:0,100", "E00"},
		{"qXfer:features:read:target.xml:zz", "E01"},
		{"qXfer:features:write:target.xml:0:abc", ""},
		{"qXfer:libraries:read::0,100", ""},
		{"qXfer:features:read:target.xml:ffffff,10", "l"},
		{"qRcmd,7a7a", string(hexText("unknown monitor command \"zz\"; try \"monitor help\"\n"))},
	} {
		if got := c.rpc(tc.in); got != tc.want {
			t.Errorf("%q: got %q, want %q", tc.in, got, tc.want)
		}
	}
	if got := c.rpc("qRcmd," + string(hexText("fault"))); !strings.Contains(string(mustUnhex(t, got)), "DIVBYZERO") {
		t.Errorf("monitor fault: %q", mustUnhex(t, got))
	}
	// g: every register in remote order, unknown ones as x.
	g := c.rpc("g")
	want := "00010000" + "01010000" + "02010000" + "03010000" + "04010000" + "05010000" + "06010000" + "xxxxxxxx" +
		"08010000" + "09010000" + "0a010000" + "0b010000" + "0c010000" + "80000020" + "f9ffffff" + "10000008" +
		"03000001" + "80000020" + "xxxxxxxx" + "xxxxxxxx" + "xxxxxxxx" + "xxxxxxxx" + "00000000" +
		"0000803f0100803f" + "0200803f0300803f" + strings.Repeat("x", 16*14) + "10000000"
	if g != want {
		t.Errorf("g:\n got %s\nwant %s", g, want)
	}
	// Target description, read in small chunks: m...m...l.
	xml := c.xfer("features", "target.xml", 0x40)
	for _, s := range []string{`<feature name="org.gnu.gdb.arm.m-profile">`, `<reg name="xpsr" bitsize="32" regnum="25"`,
		`<feature name="org.faultline.arm.m-system">`, `<reg name="msp" bitsize="32" regnum="26" type="data_ptr"`,
		`<reg name="control" bitsize="32" regnum="31"`, `<feature name="org.gnu.gdb.arm.vfp">`,
		`<reg name="d15" bitsize="64" regnum="47" type="ieee_double"`, `<reg name="fpscr" bitsize="32" regnum="48"`} {
		if !strings.Contains(xml, s) {
			t.Errorf("target.xml lacks %s:\n%s", s, xml)
		}
	}
	if xml != string(testTarget(t).TargetXML()) {
		t.Errorf("target.xml read in chunks differs from the whole")
	}
	mm := c.xfer("memory-map", "", 0x1000)
	wantMap := []string{
		`<memory type="rom" start="0x8000000" length="0x40"/>`,
		`<memory type="rom" start="0x80000f0" length="0x10"/>`,
		`<memory type="ram" start="0x8000100" length="0x10"/>`,
		`<memory type="rom" start="0x8000110" length="0x20"/>`,
		`<memory type="ram" start="0x20000000" length="0x100"/>`,
	}
	if got := strings.Join(memoryLines(mm), "\n"); got != strings.Join(wantMap, "\n") {
		t.Errorf("memory map:\n%s\nwant\n%s", got, strings.Join(wantMap, "\n"))
	}
	// No-ack mode: the OK is still acked, then neither side acks.
	if got := c.rpc("QStartNoAckMode"); got != "OK" {
		t.Fatalf("QStartNoAckMode: %q", got)
	}
	c.noAck = true
	if got := c.rpc("m20000010,2"); got != "1011" {
		t.Errorf("no-ack m: %q", got)
	}
	if got := c.last("D"); got != "OK" {
		t.Errorf("D: %q", got)
	}
	if err := c.wait(); err != nil {
		t.Errorf("session after D: %v", err)
	}
}

func mustUnhex(t *testing.T, s string) string {
	t.Helper()
	out, ok := unhexString(s)
	if !ok {
		t.Fatalf("not hex: %q", s)
	}
	return out
}

func memoryLines(xml string) []string {
	var out []string
	for _, l := range strings.Split(xml, "\n") {
		if l = strings.TrimSpace(l); strings.HasPrefix(l, "<memory ") {
			out = append(out, l)
		}
	}
	return out
}

// xfer reads a qXfer object in chunks of n bytes.
func (c *client) xfer(object, annex string, n int) string {
	c.t.Helper()
	var doc strings.Builder
	for i := 0; i < 1000; i++ {
		r := c.rpc(fmt.Sprintf("qXfer:%s:read:%s:%x,%x", object, annex, doc.Len(), n))
		if r == "" || (r[0] != 'm' && r[0] != 'l') {
			c.t.Fatalf("qXfer %s: %q", object, r)
		}
		if len(r)-1 > n {
			c.t.Fatalf("qXfer %s: %d bytes for a request of %d", object, len(r)-1, n)
		}
		doc.WriteString(r[1:])
		if r[0] == 'l' {
			return doc.String()
		}
	}
	c.t.Fatalf("qXfer %s never ended", object)
	return ""
}

func TestKill(t *testing.T) {
	c := newClient(t, Config{})
	c.sendRaw(packet("k"))
	c.expectAck()
	if err := c.wait(); err != nil {
		t.Errorf("k: %v", err)
	}
	// The server ends the session right after its OK, so the client
	// reads that reply without acking it: over net.Pipe an ack written
	// after the server closed fails, as it may on a real link (GDB
	// ignores that).
	c2 := newClient(t, Config{})
	if got := c2.last("vKill;1"); got != "OK" {
		t.Errorf("vKill: %q", got)
	}
	if err := c2.wait(); err != nil {
		t.Errorf("vKill: %v", err)
	}
}

func TestEOFEndsSession(t *testing.T) {
	c := newClient(t, Config{})
	c.rpc("?")
	c.c.Close()
	if err := c.wait(); err != nil {
		t.Errorf("EOF: %v", err)
	}
}

func TestBadChecksums(t *testing.T) {
	c := newClient(t, Config{MaxBadPackets: 3})
	c.sendRaw("$g#00")
	if b, _ := c.r.ReadByte(); b != '-' {
		t.Fatalf("bad checksum: want NAK, got %q", b)
	}
	// A good packet resets the count.
	if got := c.rpc("qC"); got != "QC1" {
		t.Fatalf("qC: %q", got)
	}
	c.sendRaw("$g#00")
	c.sendRaw("$g#0z")
	for range 2 {
		if b, _ := c.r.ReadByte(); b != '-' {
			t.Fatalf("bad checksum: want NAK, got %q", b)
		}
	}
	c.sendRaw("$g#01")
	if err := c.wait(); !errors.Is(err, ErrBadPackets) {
		t.Errorf("after 3 bad packets in a row: %v", err)
	}
}

func TestNakResends(t *testing.T) {
	c := newClient(t, Config{})
	c.sendRaw(packet("qC"))
	c.expectAck()
	first := c.recvNoAck()
	c.sendRaw("-")
	if again := c.recvNoAck(); again != first {
		t.Errorf("resent %q, first %q", again, first)
	}
	c.sendRaw("+")
	if got := c.rpc("qC"); got != "QC1" {
		t.Errorf("after resend: %q", got)
	}
}

// recvNoAck reads one raw framed packet without acking it.
func (c *client) recvNoAck() string {
	c.t.Helper()
	s, err := c.r.ReadString('#')
	if err != nil {
		c.t.Fatal(err)
	}
	var sum [2]byte
	io.ReadFull(c.r, sum[:])
	return s + string(sum[:])
}

func TestOversizedPacket(t *testing.T) {
	c := newClient(t, Config{MaxPacket: 100}) // raised to the 512-byte minimum
	if got := c.rpc("M20000000,200:" + strings.Repeat("00", 0x200)); got != "E02" {
		t.Errorf("oversized: %q", got)
	}
	// The session goes on, and replies are bounded too: m answers the
	// prefix that fits in 512 bytes.
	got := c.rpc("m20000000,100")
	if len(got) != 2*((512-4)/2) || !strings.HasPrefix(got, "000102") {
		t.Errorf("m bounded by the packet size: %d bytes", len(got))
	}
	if got := c.rpc("qSupported"); !strings.HasPrefix(got, "PacketSize=200;") {
		t.Errorf("qSupported: %q", got)
	}
}

func TestRunLengthInput(t *testing.T) {
	c := newClient(t, Config{})
	for _, tc := range []struct{ in, want string }{
		{"m200*\",4", "00010203"}, // '"' = 34: 5 more zeros, m20000000,4
		{"m20*!,4", "E01"},        // '!' = 33: 4 more zeros, m200000,4: unmapped
		{"*!", "E01"},             // '*' repeats nothing: malformed
		{"qC*", "E01"},            // no count: malformed
	} {
		if got := c.rpc(tc.in); got != tc.want {
			t.Errorf("%q: %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestIdleTimeout(t *testing.T) {
	c := newClient(t, Config{IdleTimeout: 50 * time.Millisecond})
	if err := c.wait(); !errors.Is(err, ErrTimeout) {
		t.Errorf("idle client: %v", err)
	}
}

func TestWriteTimeout(t *testing.T) {
	c := newClient(t, Config{WriteTimeout: 50 * time.Millisecond})
	// net.Pipe is unbuffered: the server's reply blocks until read.
	c.sendRaw(packet("g"))
	if err := c.wait(); !errors.Is(err, ErrTimeout) {
		t.Errorf("client that does not read: %v", err)
	}
}

// pipeStream is a stream without deadlines, like stdin/stdout.
type pipeStream struct {
	io.Reader
	io.Writer
}

func TestStreamWithoutDeadlines(t *testing.T) {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	srv := NewServer(testTarget(t), Config{WriteTimeout: 50 * time.Millisecond})
	done := make(chan error, 1)
	go func() { done <- srv.ServeConn(context.Background(), pipeStream{inR, outW}) }()
	go inW.Write([]byte(packet("?")))
	r := bufio.NewReader(outR)
	reply, err := r.ReadString('#')
	if err != nil || reply != "+$T08thread:1;#" {
		t.Fatalf("reply %q, %v", reply, err)
	}
	r.Discard(2)
	// Now stop reading: the next reply times out.
	go inW.Write([]byte(packet("g")))
	select {
	case err := <-done:
		if !errors.Is(err, ErrTimeout) {
			t.Errorf("stuck writer: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the write timeout did not end the session")
	}
	inW.Close()
	outR.Close()
}

func TestContextCancel(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- NewServer(testTarget(t), Config{}).ServeConn(ctx, b) }()
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("cancelled: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("cancel did not end the session")
	}
	b.Close()
}

func TestSequentialSessions(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- NewServer(testTarget(t), Config{}).Serve(ctx, l, 0) }()
	for i := range 3 {
		conn, err := net.Dial("tcp", l.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		conn.SetDeadline(time.Now().Add(10 * time.Second))
		c := &client{t: t, c: conn, r: bufio.NewReader(conn)}
		if got := c.rpc("?"); got != "T08thread:1;" {
			t.Errorf("session %d: ?: %q", i, got)
		}
		if i == 1 {
			conn.Close() // a client that goes away without D
			continue
		}
		if got := c.last("D"); got != "OK" {
			t.Errorf("session %d: D: %q", i, got)
		}
		conn.Close()
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Serve: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not stop")
	}
}

func TestStopSignal(t *testing.T) {
	for _, tc := range []struct {
		cfsr, hfsr uint32
		xpsr       uint32
		profile    unwinders.Profile
		want       Signal
	}{
		{0x82, 1 << 30, 3, unwinders.V7M, SIGSEGV},         // DACCVIOL, MMARVALID
		{0x01, 1 << 30, 3, unwinders.V7M, SIGSEGV},         // IACCVIOL
		{0x8200, 1 << 30, 3, unwinders.V7M, SIGSEGV},       // PRECISERR, BFARVALID
		{0x0400, 0, 5, unwinders.V7M, SIGSEGV},             // IMPRECISERR in BusFault
		{1 << 16, 1 << 30, 3, unwinders.V7M, SIGILL},       // UNDEFINSTR
		{1 << 17, 0, 6, unwinders.V7M, SIGILL},             // INVSTATE
		{1 << 19, 0, 6, unwinders.V7M, SIGILL},             // NOCP
		{1 << 25, 1 << 30, 3, unwinders.V7M, SIGFPE},       // DIVBYZERO
		{1 << 24, 0, 6, unwinders.V7M, SIGBUS},             // UNALIGNED
		{1 << 20, 0, 6, unwinders.V8M, SIGSEGV},            // STKOF
		{0, 1 << 1, 3, unwinders.V7M, SIGSEGV},             // VECTTBL
		{0, 1 << 31, 3, unwinders.V7M, SIGTRAP},            // DEBUGEVT
		{0, 0, 3, unwinders.V6M, SIGTRAP},                  // ARMv6-M: no status registers
		{0, 0, 0x10, unwinders.V7M, SIGTRAP},               // an IRQ, no fault
		{1<<25 | 0x82, 0, 6, unwinders.V7M, SIGFPE},        // in UsageFault, the UsageFault bit wins
		{1<<25 | 0x82, 1 << 30, 3, unwinders.V7M, SIGSEGV}, // in HardFault, bit order
	} {
		var regs unwinders.Registers
		regs.Set(unwinders.XPSR, tc.xpsr)
		regs.Set(unwinders.LR, 0xfffffff9)
		r := fault.Decode(tc.profile, &regs, fault.SCB{CFSR: fault.Known(tc.cfsr), HFSR: fault.Known(tc.hfsr)})
		if got := StopSignal(r); got != tc.want {
			t.Errorf("CFSR %#x HFSR %#x IPSR %d: %s, want %s (causes %v)", tc.cfsr, tc.hfsr, tc.xpsr, got, tc.want, r.Causes)
		}
	}
}

func TestNoFPWithoutFPRegisters(t *testing.T) {
	d, _ := testDump()
	d.Regs.Forget(unwinders.FPSCR)
	for i := 0; i < 32; i++ {
		d.Regs.Forget(unwinders.S(i))
	}
	tg, err := NewTarget(d, nil)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(tg.TargetXML()), "vfp") {
		t.Error("target.xml has a vfp feature for a dump without FP registers")
	}
	if r := tg.dispatch([]byte("g"), DefaultMaxPacket); len(r.data) != 8*23 {
		t.Errorf("g without FP: %d hex digits, want %d", len(r.data), 8*23)
	}
	if r := tg.dispatch([]byte("p20"), DefaultMaxPacket); string(r.data) != "E01" {
		t.Errorf("p20 without FP: %q", r.data)
	}
}

// TestSysFeature: GDB's m-system feature only when both stack pointers
// are known (testDump lacks psp).
func TestSysFeature(t *testing.T) {
	d, _ := testDump()
	for _, psp := range []bool{false, true} {
		if psp {
			d.Regs.Set(unwinders.PSP, 0x20000040)
		}
		tg, err := NewTarget(d, nil)
		if err != nil {
			t.Fatal(err)
		}
		xml := string(tg.TargetXML())
		gnu := strings.Contains(xml, `<feature name="org.gnu.gdb.arm.m-system">`)
		own := strings.Contains(xml, `<feature name="org.faultline.arm.m-system">`)
		if gnu != psp || own == psp {
			t.Errorf("psp known %v: target.xml:\n%s", psp, xml)
		}
	}
}

func TestOverlappingRegions(t *testing.T) {
	d, _ := testDump()
	d.Memory = append(d.Memory, unwinders.Region{Name: "dup", Addr: 0x20000010, Data: make([]byte, 4)})
	if _, err := NewTarget(d, nil); err == nil {
		t.Error("NewTarget accepted overlapping dump regions")
	}
	if _, err := NewTarget(nil, nil); err == nil {
		t.Error("NewTarget accepted a nil dump")
	}
}
