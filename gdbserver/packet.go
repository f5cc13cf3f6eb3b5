package gdbserver

import (
	"errors"
	"fmt"
)

// Checksum is the packet checksum of the GDB remote protocol: the sum of
// the bytes between '$' and '#' modulo 256 (GDB manual E.1 "Overview").
func Checksum(data []byte) byte {
	var s byte
	for _, b := range data {
		s += b
	}
	return s
}

// needsEscape reports whether b must be escaped in a reply: '#' and '$'
// frame packets, '}' is the escape byte itself and '*' starts a
// run-length repeat (GDB manual E.1, "Binary data").
func needsEscape(b byte) bool { return b == '#' || b == '$' || b == '}' || b == '*' }

// Escape returns data with every '#', '$', '}' and '*' replaced by '}'
// followed by the byte XOR 0x20, the encoding of binary data in the remote
// protocol. It appends to dst.
func Escape(dst, data []byte) []byte {
	for _, b := range data {
		if needsEscape(b) {
			dst = append(dst, '}', b^0x20)
			continue
		}
		dst = append(dst, b)
	}
	return dst
}

// ErrMalformed is wrapped by the errors of Unescape and ExpandRLE.
var ErrMalformed = errors.New("gdbserver: malformed packet")

// Unescape decodes binary data escaped with '}' (the inverse of Escape).
func Unescape(data []byte) ([]byte, error) {
	out := make([]byte, 0, len(data))
	for i := 0; i < len(data); i++ {
		b := data[i]
		if b == '}' {
			if i+1 == len(data) {
				return nil, fmt.Errorf("%w: escape byte '}' at the end of the data", ErrMalformed)
			}
			i++
			b = data[i] ^ 0x20
		}
		out = append(out, b)
	}
	return out, nil
}

// ExpandRLE decodes the run-length encoding of the remote protocol: "c*n"
// stands for c repeated 1 + (n - 29) times, where n is a printable
// character other than '#' and '$' (GDB manual E.1). The byte after a '}'
// escape is data, never a repeat marker. The result may not exceed max
// bytes; a longer result, a '*' with nothing before it or a bad count is an
// error wrapping ErrMalformed.
func ExpandRLE(data []byte, max int) ([]byte, error) {
	if len(data) > max {
		return nil, fmt.Errorf("%w: %d bytes, more than %d", ErrMalformed, len(data), max)
	}
	star := false
	for _, b := range data {
		if b == '*' {
			star = true
			break
		}
	}
	if !star {
		return data, nil
	}
	out := make([]byte, 0, len(data))
	for i := 0; i < len(data); i++ {
		b := data[i]
		switch {
		case b == '}' && i+1 < len(data):
			out = append(out, b, data[i+1])
			i++
		case b == '*':
			if len(out) == 0 {
				return nil, fmt.Errorf("%w: run-length marker '*' at offset %d repeats nothing", ErrMalformed, i)
			}
			if i+1 == len(data) {
				return nil, fmt.Errorf("%w: run-length marker '*' at the end of the packet has no count", ErrMalformed)
			}
			c := data[i+1]
			if c < 29+3 || c > 126 || c == '#' || c == '$' {
				return nil, fmt.Errorf("%w: bad run-length count byte 0x%02x at offset %d", ErrMalformed, c, i+1)
			}
			n := int(c) - 29
			if len(out)+n > max {
				return nil, fmt.Errorf("%w: run-length encoding expands past %d bytes", ErrMalformed, max)
			}
			last := out[len(out)-1]
			for range n {
				out = append(out, last)
			}
			i++
		default:
			out = append(out, b)
		}
		if len(out) > max {
			return nil, fmt.Errorf("%w: run-length encoding expands past %d bytes", ErrMalformed, max)
		}
	}
	return out, nil
}

// Frame encodes one packet: '$', data escaped with Escape, '#' and the
// two-digit checksum of the escaped data.
func Frame(data []byte) []byte {
	out := make([]byte, 0, len(data)+4)
	out = append(out, '$')
	out = Escape(out, data)
	sum := Checksum(out[1:])
	return append(out, '#', hexDigits[sum>>4], hexDigits[sum&15])
}

const hexDigits = "0123456789abcdef"

// eventKind is what the parser recognised in the byte stream.
type eventKind uint8

const (
	evNone      eventKind = iota // nothing complete yet
	evAck                        // '+': the client got our last packet
	evNak                        // '-': the client wants our last packet again
	evInterrupt                  // 0x03 outside a packet (Ctrl-C)
	evPacket                     // a packet with a good checksum: data in event.data
	evOversized                  // a packet with a good checksum, longer than the limit (not stored)
	evBadSum                     // a packet whose checksum is wrong or not hex
	evNoise                      // too many bytes that are not part of any usable packet
)

func (k eventKind) String() string {
	switch k {
	case evNone:
		return "none"
	case evAck:
		return "ack"
	case evNak:
		return "nak"
	case evInterrupt:
		return "interrupt"
	case evPacket:
		return "packet"
	case evOversized:
		return "oversized packet"
	case evBadSum:
		return "bad checksum"
	case evNoise:
		return "line noise"
	}
	return fmt.Sprintf("event(%d)", uint8(k))
}

// event is one thing the parser recognised.
type event struct {
	kind eventKind
	data []byte // evPacket: the packet data as sent (before run-length decoding); valid until the next feed
}

type parserState uint8

const (
	stIdle parserState = iota // between packets
	stBody                    // after '$'
	stSum1                    // after '#'
	stSum2                    // after the first checksum digit
)

// parser splits the client's byte stream into packets and acks. It stores
// at most max bytes of packet data and counts every byte it had to throw
// away since the last good packet; past noiseLimit it reports evNoise.
// It never allocates more than max bytes, whatever it is fed.
type parser struct {
	max        int
	noiseLimit int
	state      parserState
	buf        []byte
	n          int  // data bytes of the current packet, stored or not
	sum        byte // running checksum of the current packet
	want       byte // checksum sent by the client
	noise      int
}

func newParser(max int) *parser {
	return &parser{max: max, noiseLimit: 4 * max, buf: make([]byte, 0, min(max, 4096))}
}

// noisy counts one discarded byte.
func (p *parser) noisy() event {
	p.noise++
	if p.noise > p.noiseLimit {
		p.noise = 0
		return event{kind: evNoise}
	}
	return event{}
}

// feed consumes one byte.
func (p *parser) feed(b byte) event {
	switch p.state {
	case stIdle:
		switch b {
		case '$':
			p.state, p.buf, p.n, p.sum = stBody, p.buf[:0], 0, 0
		case '+':
			return event{kind: evAck}
		case '-':
			return event{kind: evNak}
		case 0x03:
			return event{kind: evInterrupt}
		default:
			return p.noisy()
		}
	case stBody:
		switch b {
		case '#':
			p.state = stSum1
		case '$':
			// A new packet starts inside the old one: GDB's own stubs
			// drop the old one too.
			ev := p.noisy()
			p.buf, p.n, p.sum = p.buf[:0], 0, 0
			return ev
		default:
			p.sum += b
			p.n++
			if p.n <= p.max {
				p.buf = append(p.buf, b)
			} else {
				return p.noisy()
			}
		}
	case stSum1:
		v, ok := unhex(b)
		if !ok {
			p.state = stIdle
			return event{kind: evBadSum}
		}
		p.want, p.state = v<<4, stSum2
	case stSum2:
		p.state = stIdle
		v, ok := unhex(b)
		if !ok || p.want|v != p.sum {
			return event{kind: evBadSum}
		}
		if p.n > p.max {
			return event{kind: evOversized}
		}
		p.noise = 0
		return event{kind: evPacket, data: p.buf}
	}
	return event{}
}

// unhex decodes one hex digit.
func unhex(b byte) (byte, bool) {
	switch {
	case b >= '0' && b <= '9':
		return b - '0', true
	case b >= 'a' && b <= 'f':
		return b - 'a' + 10, true
	case b >= 'A' && b <= 'F':
		return b - 'A' + 10, true
	}
	return 0, false
}
