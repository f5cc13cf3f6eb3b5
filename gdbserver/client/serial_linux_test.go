//go:build linux

package client_test

import (
	"bytes"
	"fmt"
	"os"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/faultline-dev/faultline/gdbserver/client"
	"github.com/faultline-dev/faultline/gdbserver/client/clienttest"
)

// A server on a serial line (a Black Magic Probe's /dev/ttyACM0): a
// pseudo-terminal stands in for it. The client opens the device path,
// puts it in raw mode (a terminal in its default cooked mode would echo
// and edit the packets) and reads with deadlines.
func TestSerialDevice(t *testing.T) {
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	defer master.Close()
	var unlock int32
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, master.Fd(), syscall.TIOCSPTLCK, uintptr(unsafe.Pointer(&unlock))); e != 0 {
		t.Skipf("unlockpt: %v", e)
	}
	var n uint32
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, master.Fd(), syscall.TIOCGPTN, uintptr(unsafe.Pointer(&n))); e != 0 {
		t.Skipf("ptsname: %v", e)
	}
	ram := randomBytes(700, 11)
	s := &clienttest.Server{PacketSize: 0x100, Mem: []clienttest.Region{{Addr: 0x20000000, Data: ram}}}
	c, err := client.Dial(fmt.Sprintf("/dev/pts/%d", n), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	go s.Serve(master)
	c.Timeout = 5 * time.Second
	if _, err := c.Handshake(); err != nil {
		t.Fatal(err)
	}
	got, holes, err := c.ReadMemory(0x20000000, 700, nil)
	if err != nil || len(holes) != 0 || !bytes.Equal(got, ram) {
		t.Fatalf("err %v, holes %v, equal %v", err, holes, bytes.Equal(got, ram))
	}
}
