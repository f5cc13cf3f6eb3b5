package client_test

import (
	"bytes"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/faultline-dev/faultline/gdbserver/client"
	"github.com/faultline-dev/faultline/gdbserver/client/clienttest"
)

// stdioRAM is what the server on stdio holds.
var stdioRAM = randomBytes(300, 9)

// TestMain serves the scripted server on standard input and output when
// the test binary is run as a |COMMAND server.
func TestMain(m *testing.M) {
	if os.Getenv("FAULTLINE_FAKE_GDB_STDIO") == "1" {
		s := &clienttest.Server{PacketSize: 0x80, NoAck: true, Mem: []clienttest.Region{{Addr: 0x20000000, Data: stdioRAM}}}
		s.Serve(stdio{})
		os.Exit(0)
	}
	os.Exit(m.Run())
}

type stdio struct{}

func (stdio) Read(p []byte) (int, error)  { return os.Stdin.Read(p) }
func (stdio) Write(p []byte) (int, error) { return os.Stdout.Write(p) }
func (stdio) Close() error                { return os.Stdout.Close() }

// "|COMMAND": a server on a command's standard input and output.
func TestCommandServer(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.Dial(fmt.Sprintf("|FAULTLINE_FAKE_GDB_STDIO=1 '%s'", exe), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Timeout = 5 * time.Second
	if _, err := c.Handshake(); err != nil {
		t.Fatal(err)
	}
	got, holes, err := c.ReadMemory(0x20000000, 300, nil)
	if err != nil || len(holes) != 0 || !bytes.Equal(got, stdioRAM) {
		t.Fatalf("err %v, holes %v, equal %v", err, holes, bytes.Equal(got, stdioRAM))
	}
	// A command that exits at once: a clear error, not a hang.
	c2, err := client.Dial("|exit 0", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	if _, err := c2.Handshake(); err == nil || !bytes.Contains([]byte(err.Error()), []byte("closed the connection")) {
		t.Fatalf("handshake with a server that exited: %v", err)
	}
}
