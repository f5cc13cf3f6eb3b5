// Package clienttest is a scripted GDB server for tests of the remote
// client and of `faultline capture`: it serves registers and memory from
// tables, answers reads outside its memory with an error, and can
// misbehave on purpose (a small packet size, a dropped connection, a bad
// checksum).
package clienttest

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
)

// Region is memory the server holds.
type Region struct {
	Addr uint32
	Data []byte
}

// Server is the script. The zero value serves nothing useful: set at
// least G (the g reply) and Mem.
type Server struct {
	PacketSize int               // stated in qSupported (default 0x4000)
	NoAck      bool              // offer QStartNoAckMode
	Features   map[string]string // qXfer:features annexes; nil: none offered
	MemoryMap  string            // qXfer:memory-map; "": not offered
	G          string            // the g reply
	P          map[int]string    // p replies by register number
	Mem        []Region          // readable memory; other reads get E14
	// DropAfterReads closes the connection instead of answering the
	// m read with this number (1-based); 0 never.
	DropAfterReads int
	// CorruptFirst sends the first reply to an m read with a bad
	// checksum (the client must NAK it and get it again).
	CorruptFirst bool
	// Stop is the reply to ? and to c (default "T05").
	Stop string
	// Run makes c resume without a stop: only an interrupt (0x03) stops
	// the target again.
	Run bool
	// Running is a target that runs when the client connects: "?" gets
	// no answer until an interrupt (0x03) stops it.
	Running bool
	// Unattached is a Black Magic Probe before "monitor swdp_scan" and
	// "attach 1": "?" gets W00 until qRcmd swdp_scan then vAttach;1.
	Unattached bool
	scanned    bool

	mu        sync.Mutex
	log       []string
	tooLong   []string
	reads     int
	corrupted bool
	noAck     bool
}

// Log returns the packets received, in order.
func (s *Server) Log() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.log...)
}

// Oversized returns the m reads whose reply would not fit PacketSize.
func (s *Server) Oversized() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.tooLong...)
}

func checksum(p []byte) byte {
	var c byte
	for _, b := range p {
		c += b
	}
	return c
}

// Serve speaks the protocol on conn until the client goes or the script
// drops the connection; it closes conn.
func (s *Server) Serve(conn io.ReadWriteCloser) {
	defer conn.Close()
	r := bufio.NewReader(conn)
	for {
		b, err := r.ReadByte()
		if err != nil {
			return
		}
		switch b {
		case 0x03:
			s.mu.Lock()
			s.log = append(s.log, "\x03")
			s.Running = false
			s.mu.Unlock()
			s.send(conn, s.stop(), false)
			continue
		case '$':
		default:
			continue // acks, noise
		}
		var pkt []byte
		for {
			c, err := r.ReadByte()
			if err != nil {
				return
			}
			if c == '#' {
				break
			}
			pkt = append(pkt, c)
		}
		var cs [2]byte
		if _, err := io.ReadFull(r, cs[:]); err != nil {
			return
		}
		if v, err := strconv.ParseUint(string(cs[:]), 16, 8); err != nil || byte(v) != checksum(pkt) {
			if !s.noAck {
				conn.Write([]byte{'-'})
			}
			continue
		}
		if !s.noAck {
			conn.Write([]byte{'+'})
		}
		s.mu.Lock()
		s.log = append(s.log, string(pkt))
		s.mu.Unlock()
		reply, drop, corrupt := s.handle(string(pkt))
		if drop {
			return
		}
		if reply == nil {
			continue
		}
		s.send(conn, *reply, corrupt)
		if string(pkt) == "QStartNoAckMode" {
			s.noAck = true
			// The client acknowledges the OK in ack mode.
			if c, err := r.ReadByte(); err != nil || c != '+' {
				return
			}
		}
	}
}

func (s *Server) stop() string {
	if s.Stop == "" {
		return "T05"
	}
	return s.Stop
}

func (s *Server) send(w io.Writer, reply string, corrupt bool) {
	cs := checksum([]byte(reply))
	if corrupt {
		cs++
	}
	fmt.Fprintf(w, "$%s#%02x", reply, cs)
}

func str(s string) *string { return &s }

// handle returns the reply (nil: none), whether to drop the connection,
// and whether to corrupt the reply's checksum.
func (s *Server) handle(p string) (*string, bool, bool) {
	size := s.PacketSize
	if size == 0 {
		size = 0x4000
	}
	switch {
	case strings.HasPrefix(p, "qSupported"):
		f := fmt.Sprintf("PacketSize=%x", size)
		if s.Features != nil {
			f += ";qXfer:features:read+"
		}
		if s.MemoryMap != "" {
			f += ";qXfer:memory-map:read+"
		}
		if s.NoAck {
			f += ";QStartNoAckMode+"
		}
		return str(f), false, false
	case p == "QStartNoAckMode":
		if s.NoAck {
			return str("OK"), false, false
		}
		return str(""), false, false
	case strings.HasPrefix(p, "qRcmd,"):
		if s.Unattached && p == "qRcmd,"+hex.EncodeToString([]byte("swdp_scan")) {
			s.mu.Lock()
			s.scanned = true
			s.mu.Unlock()
			return str("OK"), false, false
		}
		return str(""), false, false
	case p == "vAttach;1":
		s.mu.Lock()
		defer s.mu.Unlock()
		if !s.scanned {
			return str("E01"), false, false
		}
		s.Unattached = false
		return str(s.stop()), false, false
	case p == "?":
		s.mu.Lock()
		running, unattached := s.Running, s.Unattached
		s.mu.Unlock()
		if unattached {
			return str("W00"), false, false
		}
		if running {
			return nil, false, false
		}
		return str(s.stop()), false, false
	case strings.HasPrefix(p, "qXfer:features:read:"):
		rest := strings.TrimPrefix(p, "qXfer:features:read:")
		annex, rng, _ := strings.Cut(rest, ":")
		doc, ok := s.Features[annex]
		if !ok {
			return str("E00"), false, false
		}
		return str(xfer(doc, rng, size)), false, false
	case strings.HasPrefix(p, "qXfer:memory-map:read::"):
		return str(xfer(s.MemoryMap, strings.TrimPrefix(p, "qXfer:memory-map:read::"), size)), false, false
	case p == "g":
		return str(s.G), false, false
	case strings.HasPrefix(p, "p"):
		n, err := strconv.ParseUint(p[1:], 16, 32)
		if v, ok := s.P[int(n)]; ok && err == nil {
			return str(v), false, false
		}
		return str("E01"), false, false
	case strings.HasPrefix(p, "m"):
		a, l, _ := strings.Cut(p[1:], ",")
		addr, err1 := strconv.ParseUint(a, 16, 32)
		n, err2 := strconv.ParseUint(l, 16, 32)
		if err1 != nil || err2 != nil {
			return str("E02"), false, false
		}
		s.mu.Lock()
		s.reads++
		reads := s.reads
		if int(2*n)+4 > size {
			s.tooLong = append(s.tooLong, p)
		}
		corrupt := s.CorruptFirst && !s.corrupted
		s.corrupted = s.corrupted || corrupt
		s.mu.Unlock()
		if s.DropAfterReads > 0 && reads >= s.DropAfterReads {
			return nil, true, false
		}
		data, ok := s.read(uint32(addr), uint32(n))
		if !ok {
			return str("E14"), false, false
		}
		return str(hex.EncodeToString(data)), false, corrupt
	case strings.HasPrefix(p, "M"):
		a, rest, _ := strings.Cut(p[1:], ",")
		_, h, _ := strings.Cut(rest, ":")
		addr, _ := strconv.ParseUint(a, 16, 32)
		data, err := hex.DecodeString(h)
		if err != nil || !s.write(uint32(addr), data) {
			return str("E01"), false, false
		}
		return str("OK"), false, false
	case strings.HasPrefix(p, "Z0,"), strings.HasPrefix(p, "z0,"), strings.HasPrefix(p, "Z1,"), strings.HasPrefix(p, "z1,"):
		return str("OK"), false, false
	case p == "c":
		if s.Run {
			return nil, false, false
		}
		return str(s.stop()), false, false
	case p == "D":
		return str("OK"), false, false
	}
	return str(""), false, false
}

// read returns memory when all of it is held.
func (s *Server) read(addr, n uint32) ([]byte, bool) {
	for _, r := range s.Mem {
		if addr >= r.Addr && uint64(addr)+uint64(n) <= uint64(r.Addr)+uint64(len(r.Data)) {
			return r.Data[addr-r.Addr : addr-r.Addr+n], true
		}
	}
	return nil, false
}

func (s *Server) write(addr uint32, data []byte) bool {
	for _, r := range s.Mem {
		if addr >= r.Addr && uint64(addr)+uint64(len(data)) <= uint64(r.Addr)+uint64(len(r.Data)) {
			copy(r.Data[addr-r.Addr:], data)
			return true
		}
	}
	return false
}

// xfer answers a qXfer read of doc at "off,len".
func xfer(doc, rng string, size int) string {
	o, l, _ := strings.Cut(rng, ",")
	off, _ := strconv.ParseUint(o, 16, 32)
	n, _ := strconv.ParseUint(l, 16, 32)
	n = min(n, uint64(size-8))
	if off >= uint64(len(doc)) {
		return "l"
	}
	end := min(off+n, uint64(len(doc)))
	chunk := doc[off:end]
	var b bytes.Buffer
	if end < uint64(len(doc)) {
		b.WriteByte('m')
	} else {
		b.WriteByte('l')
	}
	for i := 0; i < len(chunk); i++ {
		switch c := chunk[i]; c {
		case '$', '#', '}', '*':
			b.WriteByte('}')
			b.WriteByte(c ^ 0x20)
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}
