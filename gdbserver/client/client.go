// Package client is a GDB remote serial protocol client (GDB manual,
// appendix E "GDB Remote Serial Protocol"): it connects to a GDB server
// (OpenOCD, pyOCD, a J-Link GDB server, probe-rs, a Black Magic Probe,
// QEMU's gdbstub, faultline gdbserver) over TCP, a serial device or the
// standard input and output of a command, and reads and writes the
// target's registers and memory.
//
// Every wait for the server is bounded by Client.Timeout, every loop over
// what the server sends is bounded (packet length, line noise, retries),
// and a server that closes the connection gives ErrDisconnected.
package client

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"
)

// ErrDisconnected is returned when the server closed the connection.
var ErrDisconnected = errors.New("the GDB server closed the connection")

// ErrTimeout is returned when the server did not answer in time.
var ErrTimeout = errors.New("the GDB server did not answer in time")

// ErrorReply is an "Enn" reply.
type ErrorReply struct {
	Cmd  string // the command, abbreviated
	Code string // "E01", "E.message", ...
}

func (e *ErrorReply) Error() string { return fmt.Sprintf("%s: the server replied %s", e.Cmd, e.Code) }

// Bounds of what the client accepts from a server.
const (
	// MaxPacket bounds a packet's payload (after run-length expansion).
	MaxPacket = 1 << 20
	// maxNoise bounds the bytes skipped while looking for a packet start.
	maxNoise = 1 << 16
	// maxConsole bounds the "O" console-output packets accepted while
	// waiting for one stop reply.
	maxConsole = 100000
	// DefaultPacketSize is assumed when the server does not state one
	// (the GDB manual's minimum useful size).
	DefaultPacketSize = 400
)

// Client is a connection to one GDB server. It is not safe for
// concurrent use.
type Client struct {
	// Timeout bounds every wait for one reply (default 5s).
	Timeout time.Duration
	// Retries is how many times a read command is sent again after a
	// timeout or a bad checksum (default 3).
	Retries int
	// PacketSize is the server's maximum packet size (qSupported).
	PacketSize int
	// Features is the server's qSupported reply.
	Features map[string]string
	// Remote is the address given to Dial, for messages.
	Remote string

	conn    io.ReadWriteCloser
	r       *bufio.Reader
	dl      deadliner
	noAck   bool
	last    string // the command in flight, for messages
	cmd     *exec.Cmd
	stderr  *boundedBuffer
	closeMu sync.Once
	vcont   int // Step: 0 not asked yet, 1 vCont;s, 2 s
}

// deadliner is what connections with read deadlines implement (net.Conn,
// *os.File for pipes and terminals).
type deadliner interface{ SetReadDeadline(time.Time) error }

// New wraps an established connection (a net.Conn, a pipe). Handshake
// must be called before the other methods.
func New(conn io.ReadWriteCloser, remote string) *Client {
	c := &Client{Timeout: 5 * time.Second, Retries: 3, PacketSize: DefaultPacketSize, Remote: remote, conn: conn, r: bufio.NewReaderSize(conn, 64<<10)}
	if d, ok := conn.(deadliner); ok {
		c.dl = d
	}
	return c
}

// Dial connects to remote: "HOST:PORT" (TCP), a device path (a serial
// port, /dev/ttyACM0 for a Black Magic Probe), or "|COMMAND" (a server
// speaking the protocol on its standard input and output, run with sh -c).
func Dial(remote string, timeout time.Duration) (*Client, error) {
	switch {
	case strings.HasPrefix(remote, "|"):
		return dialCommand(remote, strings.TrimSpace(remote[1:]))
	case strings.HasPrefix(remote, "/") || strings.HasPrefix(remote, "."):
		f, err := openSerial(remote)
		if err != nil {
			return nil, fmt.Errorf("--remote %s: %w", remote, err)
		}
		return New(f, remote), nil
	}
	if _, _, err := net.SplitHostPort(remote); err != nil {
		return nil, fmt.Errorf("--remote %q: want HOST:PORT, a device path or |COMMAND", remote)
	}
	conn, err := net.DialTimeout("tcp", remote, timeout)
	if err != nil {
		return nil, fmt.Errorf("--remote %s: %w", remote, err)
	}
	return New(conn, remote), nil
}

// pipeConn joins a command's stdout (read) and stdin (write).
type pipeConn struct {
	r *os.File
	w io.WriteCloser
}

func (p *pipeConn) Read(b []byte) (int, error)        { return p.r.Read(b) }
func (p *pipeConn) Write(b []byte) (int, error)       { return p.w.Write(b) }
func (p *pipeConn) SetReadDeadline(t time.Time) error { return p.r.SetReadDeadline(t) }
func (p *pipeConn) Close() error {
	e1 := p.w.Close()
	e2 := p.r.Close()
	return errors.Join(e1, e2)
}

func dialCommand(remote, command string) (*Client, error) {
	if command == "" {
		return nil, fmt.Errorf("--remote %q: no command after |", remote)
	}
	cmd := exec.Command("sh", "-c", command)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	cmd.Stdout = pw
	stderr := &boundedBuffer{max: 4096}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		pr.Close()
		pw.Close()
		return nil, fmt.Errorf("--remote %s: %w", remote, err)
	}
	pw.Close()
	c := New(&pipeConn{r: pr, w: stdin}, remote)
	c.cmd, c.stderr = cmd, stderr
	return c, nil
}

// boundedBuffer keeps the first max bytes written to it.
type boundedBuffer struct {
	mu  sync.Mutex
	max int
	b   bytes.Buffer
}

func (b *boundedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if room := b.max - b.b.Len(); room > 0 {
		b.b.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}

func (b *boundedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return strings.TrimSpace(b.b.String())
}

// Close closes the connection (and waits for a |COMMAND server, which
// gets its standard input closed, for at most Timeout before killing it).
func (c *Client) Close() error {
	var err error
	c.closeMu.Do(func() {
		err = c.conn.Close()
		if c.cmd != nil {
			done := make(chan struct{})
			go func() { c.cmd.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(c.timeout()):
				c.cmd.Process.Kill()
				<-done
			}
		}
	})
	return err
}

func (c *Client) timeout() time.Duration {
	if c.Timeout <= 0 {
		return 5 * time.Second
	}
	return c.Timeout
}

func (c *Client) retries() int {
	if c.Retries < 0 {
		return 0
	}
	return c.Retries
}

// ioErr turns a read or write error into ErrDisconnected or ErrTimeout,
// naming the command in flight.
func (c *Client) ioErr(err error) error {
	var ne net.Error
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()):
		return fmt.Errorf("%s: %w (%v, command %s)", c.Remote, ErrTimeout, c.timeout(), c.last)
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) || errors.Is(err, os.ErrClosed) || isReset(err):
		extra := ""
		if c.stderr != nil {
			if s := c.stderr.String(); s != "" {
				extra = "; its stderr: " + s
			}
		}
		return fmt.Errorf("%s: %w (during %s)%s", c.Remote, ErrDisconnected, c.last, extra)
	}
	return fmt.Errorf("%s: %w (during %s)", c.Remote, err, c.last)
}

func isReset(err error) bool {
	s := err.Error()
	return strings.Contains(s, "connection reset") || strings.Contains(s, "broken pipe")
}

func (c *Client) setDeadline(d time.Duration) {
	if c.dl != nil {
		c.dl.SetReadDeadline(time.Now().Add(d))
	}
}

func checksum(p []byte) byte {
	var s byte
	for _, b := range p {
		s += b
	}
	return s
}

// escape applies the binary escapes of the protocol ($, #, } and *).
func escape(p []byte) []byte {
	var out []byte
	for _, b := range p {
		switch b {
		case '$', '#', '}', '*':
			out = append(out, '}', b^0x20)
		default:
			out = append(out, b)
		}
	}
	return out
}

// send writes one packet and, in ack mode, waits for its '+' (a '-' sends
// it again, at most Retries times).
func (c *Client) send(payload []byte) error {
	frame := make([]byte, 0, len(payload)+4)
	frame = append(frame, '$')
	frame = append(frame, payload...)
	frame = fmt.Appendf(frame, "#%02x", checksum(payload))
	for try := 0; ; try++ {
		if _, err := c.conn.Write(frame); err != nil {
			return c.ioErr(err)
		}
		if c.noAck {
			return nil
		}
		c.setDeadline(c.timeout())
		ok, err := c.readAck()
		if err != nil {
			return err
		}
		if ok {
			return nil
		}
		if try >= c.retries() {
			return fmt.Errorf("%s: the server rejected packet %s %d times (bad checksum on its side)", c.Remote, c.last, try+1)
		}
	}
}

// readAck reads up to the next '+' or '-', skipping other bytes (bounded).
func (c *Client) readAck() (bool, error) {
	for n := 0; n < maxNoise; n++ {
		b, err := c.r.ReadByte()
		if err != nil {
			return false, c.ioErr(err)
		}
		switch b {
		case '+':
			return true, nil
		case '-':
			return false, nil
		case '$':
			// A server that answers without acknowledging: take the
			// packet as the ack.
			c.r.UnreadByte()
			return true, nil
		}
	}
	return false, fmt.Errorf("%s: no acknowledgement within %d bytes of noise (during %s)", c.Remote, maxNoise, c.last)
}

// errBadChecksum marks a received packet whose checksum did not match.
var errBadChecksum = errors.New("bad checksum")

// receive reads one packet, acknowledges it in ack mode and returns its
// payload, unescaped and run-length expanded. A packet with a bad
// checksum is NAKed and read again, at most Retries times.
func (c *Client) receive(wait time.Duration) ([]byte, error) {
	for try := 0; ; try++ {
		c.setDeadline(wait)
		p, err := c.readPacket()
		if err == nil {
			if !c.noAck {
				if _, err := c.conn.Write([]byte{'+'}); err != nil {
					return nil, c.ioErr(err)
				}
			}
			return p, nil
		}
		if !errors.Is(err, errBadChecksum) {
			return nil, err
		}
		if c.noAck || try >= c.retries() {
			return nil, fmt.Errorf("%s: reply to %s: %w", c.Remote, c.last, err)
		}
		if _, err := c.conn.Write([]byte{'-'}); err != nil {
			return nil, c.ioErr(err)
		}
	}
}

func (c *Client) readPacket() ([]byte, error) {
	// Find '$' (acks, notifications' noise and stray bytes skipped).
	for n := 0; ; n++ {
		if n >= maxNoise {
			return nil, fmt.Errorf("%s: no packet within %d bytes (during %s)", c.Remote, maxNoise, c.last)
		}
		b, err := c.r.ReadByte()
		if err != nil {
			return nil, c.ioErr(err)
		}
		if b == '$' {
			break
		}
	}
	var raw []byte
	for {
		b, err := c.r.ReadByte()
		if err != nil {
			return nil, c.ioErr(err)
		}
		if b == '#' {
			break
		}
		if len(raw) >= 2*MaxPacket {
			return nil, fmt.Errorf("%s: reply to %s longer than %d bytes", c.Remote, c.last, 2*MaxPacket)
		}
		raw = append(raw, b)
	}
	var cs [2]byte
	if _, err := io.ReadFull(c.r, cs[:]); err != nil {
		return nil, c.ioErr(err)
	}
	want, err := strconv.ParseUint(string(cs[:]), 16, 8)
	if err != nil || byte(want) != checksum(raw) {
		return nil, errBadChecksum
	}
	return decode(raw)
}

// decode undoes escapes and run-length encoding (bounded by MaxPacket).
func decode(raw []byte) ([]byte, error) {
	out := make([]byte, 0, len(raw))
	for i := 0; i < len(raw); i++ {
		b := raw[i]
		switch {
		case b == '}' && i+1 < len(raw):
			i++
			out = append(out, raw[i]^0x20)
		case b == '*' && i+1 < len(raw) && len(out) > 0:
			i++
			n := int(raw[i]) - 29
			if n < 0 {
				return nil, fmt.Errorf("bad run-length count %q", raw[i])
			}
			if len(out)+n > MaxPacket {
				return nil, fmt.Errorf("reply longer than %d bytes after run-length expansion", MaxPacket)
			}
			last := out[len(out)-1]
			for k := 0; k < n; k++ {
				out = append(out, last)
			}
		default:
			out = append(out, b)
		}
		if len(out) > MaxPacket {
			return nil, fmt.Errorf("reply longer than %d bytes", MaxPacket)
		}
	}
	return out, nil
}

// Command sends cmd and returns the reply, skipping console output ("O"
// packets, bounded). A timeout is retried Retries times.
func (c *Client) Command(cmd string) ([]byte, error) {
	return c.command([]byte(cmd), true)
}

func (c *Client) command(cmd []byte, retry bool) ([]byte, error) {
	c.last = abbrev(cmd)
	for try := 0; ; try++ {
		if err := c.send(escapeCmd(cmd)); err != nil {
			return nil, err
		}
		p, err := c.reply(c.timeout())
		if err == nil {
			return p, nil
		}
		if !retry || !errors.Is(err, ErrTimeout) || try >= c.retries() {
			return nil, err
		}
	}
}

// escapeCmd escapes binary data after the ':' of X packets only; other
// commands are ASCII.
func escapeCmd(cmd []byte) []byte {
	if len(cmd) > 0 && cmd[0] == 'X' {
		if i := bytes.IndexByte(cmd, ':'); i >= 0 {
			return append(append([]byte(nil), cmd[:i+1]...), escape(cmd[i+1:])...)
		}
	}
	return cmd
}

// reply reads the reply to a command, skipping console output.
func (c *Client) reply(wait time.Duration) ([]byte, error) {
	for n := 0; n < maxConsole; n++ {
		p, err := c.receive(wait)
		if err != nil {
			return nil, err
		}
		if len(p) > 1 && p[0] == 'O' && p[1] != 'K' && isHex(p[1:]) {
			continue
		}
		return p, nil
	}
	return nil, fmt.Errorf("%s: more than %d console-output packets (during %s)", c.Remote, maxConsole, c.last)
}

func isHex(p []byte) bool {
	for _, b := range p {
		if !(b >= '0' && b <= '9' || b >= 'a' && b <= 'f' || b >= 'A' && b <= 'F') {
			return false
		}
	}
	return len(p)%2 == 0
}

func abbrev(cmd []byte) string {
	if len(cmd) > 40 {
		return fmt.Sprintf("%q...", cmd[:40])
	}
	return fmt.Sprintf("%q", cmd)
}

// isError reports whether p is an error reply ("E01", "E.text").
func isError(p []byte) bool {
	return len(p) >= 2 && p[0] == 'E' && (p[1] == '.' || len(p) == 3 && isHex(p[1:]))
}

// Handshake negotiates features (qSupported), switches to no-ack mode when
// the server offers it, and returns the stop reply to "?" (the target's
// state).
func (c *Client) Handshake() (stop []byte, err error) {
	// A leading '+' acknowledges anything the server sent before us, as
	// GDB does.
	if _, err := c.conn.Write([]byte{'+'}); err != nil {
		return nil, c.ioErr(err)
	}
	p, err := c.Command("qSupported:swbreak+;hwbreak+;xmlRegisters=arm;vContSupported+")
	if err != nil {
		return nil, err
	}
	c.Features = map[string]string{}
	for _, f := range strings.Split(string(p), ";") {
		switch {
		case f == "":
		case strings.Contains(f, "="):
			k, v, _ := strings.Cut(f, "=")
			c.Features[k] = v
		default:
			c.Features[f[:len(f)-1]] = f[len(f)-1:]
		}
	}
	if v, ok := c.Features["PacketSize"]; ok {
		n, err := strconv.ParseUint(v, 16, 32)
		if err != nil || n < 16 {
			return nil, fmt.Errorf("%s: qSupported: PacketSize=%s: want a hex number of at least 0x10", c.Remote, v)
		}
		c.PacketSize = int(min(n, MaxPacket))
	}
	if c.Features["QStartNoAckMode"] == "+" {
		r, err := c.Command("QStartNoAckMode")
		if err != nil {
			return nil, err
		}
		if string(r) == "OK" {
			c.noAck = true
		}
	}
	return c.Status()
}

// Status asks for the target's state ("?") and waits at most a second
// (or Timeout, when shorter), without retries: a server that does not
// answer while the target runs gives ErrTimeout at once, and the caller
// interrupts the target.
func (c *Client) Status() ([]byte, error) {
	c.last = `"?"`
	if err := c.send([]byte("?")); err != nil {
		return nil, err
	}
	return c.reply(min(c.timeout(), time.Second))
}

// Supported reports whether the server offered feature f with "+".
func (c *Client) Supported(f string) bool { return c.Features[f] == "+" }

// NoAck reports whether no-ack mode is on.
func (c *Client) NoAck() bool { return c.noAck }

// Interrupt stops a running target (the 0x03 byte) and returns its stop
// reply. A second stop reply that crossed the interrupt (a breakpoint hit
// at that moment, a late answer to "?") is read and dropped.
func (c *Client) Interrupt() ([]byte, error) {
	c.last = "interrupt (0x03)"
	if _, err := c.conn.Write([]byte{0x03}); err != nil {
		return nil, c.ioErr(err)
	}
	p, err := c.reply(c.timeout())
	if err != nil {
		return nil, err
	}
	c.drain()
	return p, nil
}

// drain reads and drops what the server sends within a short while (a
// stop reply that crossed an interrupt), at most 16 packets.
func (c *Client) drain() {
	for i := 0; i < 16; i++ {
		if _, err := c.receive(200 * time.Millisecond); err != nil {
			return
		}
	}
}

// Continue resumes the target ("c") and waits up to wait for its stop
// reply. On a timeout it interrupts the target and returns the stop reply
// to the interrupt with timedOut set.
func (c *Client) Continue(wait time.Duration) (stop []byte, timedOut bool, err error) {
	c.last = `"c"`
	if err := c.send([]byte("c")); err != nil {
		return nil, false, err
	}
	p, err := c.reply(wait)
	if err == nil {
		if isError(p) {
			return nil, false, &ErrorReply{Cmd: "c", Code: string(p)}
		}
		return p, false, nil
	}
	if !errors.Is(err, ErrTimeout) {
		return nil, false, err
	}
	p, err = c.Interrupt()
	if err != nil {
		return nil, true, err
	}
	return p, true, nil
}

// Resume sends "c" and does not wait for the target to stop (the
// connection is to be closed next).
func (c *Client) Resume() error {
	c.last = `"c"`
	return c.send([]byte("c"))
}

// Detach sends "D" (the server decides whether the target then runs).
func (c *Client) Detach() error {
	p, err := c.command([]byte("D"), false)
	if err != nil {
		return err
	}
	if isError(p) {
		return &ErrorReply{Cmd: "D", Code: string(p)}
	}
	return nil
}

// Breakpoint inserts (on) or removes a breakpoint of kind 0 (software) or
// 1 (hardware) at addr for a Thumb instruction. It reports false when the
// server does not support that kind (empty reply).
func (c *Client) Breakpoint(kind int, addr uint32, on bool) (bool, error) {
	op := 'z'
	if on {
		op = 'Z'
	}
	p, err := c.Command(fmt.Sprintf("%c%d,%x,2", op, kind, addr))
	if err != nil {
		return false, err
	}
	switch {
	case len(p) == 0:
		return false, nil
	case string(p) == "OK":
		return true, nil
	}
	return false, &ErrorReply{Cmd: fmt.Sprintf("%c%d,%x", op, kind, addr), Code: string(p)}
}

// WriteMemory writes data at addr with M packets sized to PacketSize.
func (c *Client) WriteMemory(addr uint32, data []byte) error {
	chunk := max((c.PacketSize-32)/2, 1)
	for off := 0; off < len(data); off += chunk {
		n := min(chunk, len(data)-off)
		cmd := fmt.Sprintf("M%x,%x:%x", addr+uint32(off), n, data[off:off+n])
		p, err := c.Command(cmd)
		if err != nil {
			return err
		}
		if string(p) != "OK" {
			return &ErrorReply{Cmd: fmt.Sprintf("M%x,%x", addr+uint32(off), n), Code: string(p)}
		}
	}
	return nil
}

// ReadChunk is the largest m read that fits a reply in PacketSize.
func (c *Client) ReadChunk() int {
	return max(min((c.PacketSize-4)/2, 4096), 1)
}

// HoleGrain is the granularity of holes: a read the server refuses is
// tried again in pieces of this size.
const HoleGrain = 256

// Hole is memory the server would not read.
type Hole struct {
	Addr  uint32
	Size  uint32
	Reply string // the error reply
}

// ReadMemory reads size bytes at addr in chunks of ReadChunk. A chunk the
// server answers with an error is read again in pieces of HoleGrain; a
// piece still refused is a hole (left zero in the result, listed in
// holes); a short reply is taken as far as it goes and the rest is read
// again. progress, when not nil, is called after each chunk with the
// bytes done.
func (c *Client) ReadMemory(addr uint32, size uint32, progress func(done uint32)) (data []byte, holes []Hole, err error) {
	data = make([]byte, size)
	chunk := uint32(c.ReadChunk())
	// fineEnd: up to there, a chunk the server refused is read again in
	// pieces of HoleGrain, so that a hole costs at most that much of the
	// readable memory around it.
	fineEnd := uint32(0)
	for off := uint32(0); off < size; {
		n := min(chunk, size-off)
		if off < fineEnd {
			n = min(HoleGrain, fineEnd-off)
		}
		a := addr + off
		p, err := c.Command(fmt.Sprintf("m%x,%x", a, n))
		if err != nil {
			return nil, nil, err
		}
		switch {
		case (isError(p) || len(p) == 0) && n > HoleGrain:
			fineEnd = off + n
			continue
		case isError(p) || len(p) == 0:
			code := string(p)
			if code == "" {
				code = "empty reply"
			}
			if len(holes) > 0 && holes[len(holes)-1].Addr+holes[len(holes)-1].Size == a && holes[len(holes)-1].Reply == code {
				holes[len(holes)-1].Size += n
			} else {
				holes = append(holes, Hole{Addr: a, Size: n, Reply: code})
			}
			off += n
		default:
			if len(p)%2 != 0 || !isHex(p) || uint32(len(p)/2) > n {
				return nil, nil, fmt.Errorf("%s: reply to m%x,%x: want at most %d hex bytes, got %q", c.Remote, a, n, n, abbrevS(p))
			}
			got := uint32(len(p) / 2)
			for i := uint32(0); i < got; i++ {
				v, _ := strconv.ParseUint(string(p[2*i:2*i+2]), 16, 8)
				data[off+i] = byte(v)
			}
			off += got
		}
		if progress != nil {
			progress(off)
		}
	}
	return data, holes, nil
}

func abbrevS(p []byte) string {
	if len(p) > 40 {
		return string(p[:40]) + "..."
	}
	return string(p)
}

// Xfer reads a whole qXfer object (object "features", annex "target.xml";
// object "memory-map", annex ""), in chunks sized to PacketSize, at most
// limit bytes.
func (c *Client) Xfer(object, annex string, limit int) ([]byte, error) {
	var out []byte
	chunk := max(c.PacketSize-8, 16)
	for rounds := 0; rounds <= limit/16+1; rounds++ {
		p, err := c.Command(fmt.Sprintf("qXfer:%s:read:%s:%x,%x", object, annex, len(out), chunk))
		if err != nil {
			return nil, err
		}
		if len(p) == 0 || isError(p) {
			return nil, &ErrorReply{Cmd: fmt.Sprintf("qXfer:%s:read:%s", object, annex), Code: string(p)}
		}
		out = append(out, p[1:]...)
		if len(out) > limit {
			return nil, fmt.Errorf("%s: qXfer:%s:read:%s: longer than %d bytes", c.Remote, object, annex, limit)
		}
		switch p[0] {
		case 'l':
			return out, nil
		case 'm':
			if len(p) == 1 {
				return nil, fmt.Errorf("%s: qXfer:%s:read:%s: empty 'm' reply", c.Remote, object, annex)
			}
		default:
			return nil, fmt.Errorf("%s: qXfer:%s:read:%s: reply %q: want l or m", c.Remote, object, annex, abbrevS(p))
		}
	}
	return nil, fmt.Errorf("%s: qXfer:%s:read:%s: too many chunks", c.Remote, object, annex)
}

// Step executes one instruction ("vCont;s" when the server lists it in
// its vCont? reply, else "s") and returns the stop reply. Servers mask
// interrupts while stepping by default (QEMU's gdbstub, OpenOCD's
// cortex_m maskisr auto), so the step runs that instruction only.
func (c *Client) Step() ([]byte, error) {
	if c.vcont == 0 {
		c.vcont = 2
		if p, err := c.Command("vCont?"); err == nil && bytes.HasPrefix(p, []byte("vCont")) {
			for _, a := range strings.Split(string(p[len("vCont"):]), ";") {
				if a == "s" {
					c.vcont = 1
				}
			}
		}
	}
	cmd := "s"
	if c.vcont == 1 {
		cmd = "vCont;s"
	}
	p, err := c.command([]byte(cmd), false)
	if err != nil {
		return nil, err
	}
	if isError(p) || len(p) == 0 {
		return nil, &ErrorReply{Cmd: cmd, Code: string(p)}
	}
	return p, nil
}

// WriteRegister writes register num ("P"); value is little-endian, as g
// and p give it. It reports false when the server does not support P
// (empty reply).
func (c *Client) WriteRegister(num int, value []byte) (bool, error) {
	p, err := c.Command(fmt.Sprintf("P%x=%x", num, value))
	if err != nil {
		return false, err
	}
	switch {
	case len(p) == 0:
		return false, nil
	case string(p) == "OK":
		return true, nil
	}
	return false, &ErrorReply{Cmd: fmt.Sprintf("P%x", num), Code: string(p)}
}

// WriteAllRegisters writes the g block back ("G" with hex as g gave it).
func (c *Client) WriteAllRegisters(g []byte) error {
	p, err := c.Command("G" + string(g))
	if err != nil {
		return err
	}
	if string(p) != "OK" {
		return &ErrorReply{Cmd: "G", Code: string(p)}
	}
	return nil
}

// Monitor sends a monitor command (qRcmd, hex-encoded) and reports
// whether the server answered OK (its console output is dropped). An
// empty reply (qRcmd not supported) or an error reply is false.
func (c *Client) Monitor(cmd string) (bool, error) {
	p, err := c.command([]byte(fmt.Sprintf("qRcmd,%x", cmd)), false)
	if err != nil {
		return false, err
	}
	return string(p) == "OK", nil
}

// Attach sends vAttach;PID (extended-remote servers such as the Black
// Magic Probe, where PID numbers a target found by a scan) and returns
// the stop reply.
func (c *Client) Attach(pid int) ([]byte, error) {
	cmd := fmt.Sprintf("vAttach;%x", pid)
	p, err := c.command([]byte(cmd), false)
	if err != nil {
		return nil, err
	}
	if len(p) == 0 || isError(p) {
		return nil, &ErrorReply{Cmd: cmd, Code: string(p)}
	}
	return p, nil
}
