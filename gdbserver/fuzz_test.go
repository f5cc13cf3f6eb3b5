package gdbserver

import (
	"bytes"
	"context"
	"io"
	"testing"
)

// FuzzPacket feeds arbitrary bytes to the packet parser, dispatches every
// packet it yields, dispatches the input itself as a packet, and runs a
// whole session over it: nothing may panic or hang, and every reply must
// fit in the packet size and survive framing.
func FuzzPacket(f *testing.F) {
	for _, s := range []string{
		"+", "-", "\x03", "$#00", "$g#67", "$?#3f", "$g#00", "$g#zz", "$$$###", "}",
		"qSupported:multiprocess+;swbreak+", "qXfer:features:read:target.xml:0,fff",
		"qXfer:memory-map:read::0,10", "m20000000,100", "m200000fe,10", "mffffffff,ffffffff",
		"p0", "p30", "pffffffffffffffff", "g", "G00", "M0,1:00", "X0,1:}]", "Z0,0,2", "c", "s",
		"vCont?", "vCont;c", "vMustReplyEmpty", "QStartNoAckMode", "D", "k", "vKill;1", "Hg0",
		"T1", "qRcmd,6661756c74", "qRcmd,zz", "qThreadExtraInfo,1", "0*\"", "*", "a*~~~~",
	} {
		f.Add([]byte(s))
		f.Add(Frame([]byte(s)))
	}
	f.Add([]byte("+$QStartNoAckMode#b0+$g#67$m20000000,4#fd$D#44"))
	tg := testTarget(f)
	const max = minPacket
	check := func(t *testing.T, pkt []byte) {
		r := tg.dispatch(pkt, max)
		if r.none {
			return
		}
		esc := Escape(nil, r.data)
		if len(esc) > max {
			t.Fatalf("reply to %q: %d bytes escaped, more than %d", pkt, len(esc), max)
		}
		p := newParser(max)
		var got []byte
		for _, b := range Frame(r.data) {
			if ev := p.feed(b); ev.kind == evPacket {
				got = ev.data
			} else if ev.kind != evNone {
				t.Fatalf("reply to %q: framing gives %s", pkt, ev.kind)
			}
		}
		back, err := Unescape(got)
		if err != nil || !bytes.Equal(back, r.data) {
			t.Fatalf("reply to %q does not survive framing: %q, %v", pkt, back, err)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		p := newParser(max)
		for _, b := range data {
			ev := p.feed(b)
			if ev.kind != evPacket {
				continue
			}
			if len(ev.data) > max {
				t.Fatalf("parser stored %d bytes, limit %d", len(ev.data), max)
			}
			if pkt, err := ExpandRLE(ev.data, max); err == nil {
				if len(pkt) > max {
					t.Fatalf("ExpandRLE returned %d bytes, limit %d", len(pkt), max)
				}
				check(t, pkt)
			}
		}
		if len(data) <= max {
			check(t, data)
		}
		srv := NewServer(tg, Config{MaxPacket: max})
		var out bytes.Buffer
		err := srv.ServeConn(context.Background(), struct {
			io.Reader
			io.Writer
		}{bytes.NewReader(data), &out})
		_ = err // bad input may end the session with an error; it must end
	})
}
