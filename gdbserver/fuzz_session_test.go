package gdbserver

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// FuzzSession runs a whole session with the server's default limits over
// what a hostile client sends: the session must end, and everything the
// server writes must be acknowledgements ('+', '-') and well-framed
// packets with good checksums, no longer than the packet size. An error
// ending the session must be one of the documented ones. The corpus is
// seeded with the client streams of fixtures/hostile/gdb.
func FuzzSession(f *testing.F) {
	paths, _ := filepath.Glob("../fixtures/hostile/gdb/*")
	if len(paths) == 0 {
		f.Fatal("no hostile GDB sessions in fixtures/hostile/gdb")
	}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	tg := testTarget(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		srv := NewServer(tg, Config{IdleTimeout: -1, WriteTimeout: -1})
		var out bytes.Buffer
		err := srv.ServeConn(context.Background(), struct {
			io.Reader
			io.Writer
		}{bytes.NewReader(data), &out})
		if err != nil && !errors.Is(err, ErrNoise) && !errors.Is(err, ErrBadPackets) {
			t.Fatalf("session ended with an undocumented error: %v", err)
		}
		// The server's stream: acks and framed packets only.
		p := newParser(DefaultMaxPacket)
		for i, b := range out.Bytes() {
			switch ev := p.feed(b); ev.kind {
			case evNone, evAck, evNak, evPacket:
			default:
				t.Fatalf("server output byte %d: %s in %q", i, ev.kind, out.Bytes())
			}
		}
		if p.state != stIdle {
			t.Fatalf("server output ends inside a packet: %q", out.Bytes())
		}
	})
}
