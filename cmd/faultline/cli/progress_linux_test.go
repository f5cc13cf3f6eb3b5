package cli

import (
	"bytes"
	"io"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"
)

// openPTY opens a pseudo-terminal pair with the standard library only
// (Linux: /dev/ptmx, TIOCSPTLCK, TIOCGPTN).
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	var unlock int32
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, m.Fd(), syscall.TIOCSPTLCK, uintptr(unsafe.Pointer(&unlock))); e != 0 {
		m.Close()
		t.Skipf("unlockpt: %v", e)
	}
	var n uint32
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, m.Fd(), syscall.TIOCGPTN, uintptr(unsafe.Pointer(&n))); e != 0 {
		m.Close()
		t.Skipf("ptsname: %v", e)
	}
	s, err := os.OpenFile("/dev/pts/"+itoa(n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		m.Close()
		t.Skipf("opening the terminal side: %v", err)
	}
	return m, s
}

func itoa(n uint32) string {
	var b [10]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
		if n == 0 {
			return string(b[i:])
		}
	}
}

// TestProgressOnTerminal: a batch draws its progress bar on stderr when
// stderr is a terminal (a real pseudo-terminal here), and erases it at the
// end; not on a pipe or a buffer, and not on /dev/null, which is a
// character device but no terminal.
func TestProgressOnTerminal(t *testing.T) {
	master, slave := openPTY(t)
	defer master.Close()
	if !isTerminal(slave) {
		t.Fatal("isTerminal(pseudo-terminal) = false")
	}
	if null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0); err == nil {
		if isTerminal(null) {
			t.Error("isTerminal(/dev/null) = true")
		}
		null.Close()
	}
	if isTerminal(&bytes.Buffer{}) {
		t.Error("isTerminal(buffer) = true")
	}

	got := make(chan string, 1)
	go func() {
		var b bytes.Buffer
		io.Copy(&b, master) // ends with EIO once the terminal side is closed
		got <- b.String()
	}()
	dir := fleet(t)
	var stdout bytes.Buffer
	code := Run([]string{"analyze", "--elf", batchELF(), "--format", "jsonl", "-j", "2", dir}, strings.NewReader(""), &stdout, slave)
	slave.Close()
	if code != ExitInput {
		t.Errorf("exit %d, want 1 (the fleet holds one corrupt dump)", code)
	}
	var tty string
	select {
	case tty = <-got:
	case <-time.After(10 * time.Second):
		t.Fatal("reading the terminal did not end")
	}
	if !strings.Contains(tty, "\r\x1b[K[") || !strings.Contains(tty, " dumps") {
		t.Errorf("no progress bar on the terminal: %q", tty)
	}
	if !strings.Contains(tty, "corrupt.json") {
		t.Errorf("the error about the corrupt dump is missing from the terminal: %q", tty)
	}
	// The last bar drawn is erased afterwards (by the end of the batch,
	// or before a message is printed).
	lastBar := strings.LastIndex(tty, "\r\x1b[K[")
	lastErase := -1
	for i := 0; i < len(tty); {
		j := strings.Index(tty[i:], "\r\x1b[K")
		if j < 0 {
			break
		}
		if k := i + j + len("\r\x1b[K"); k == len(tty) || tty[k] != '[' {
			lastErase = i + j
		}
		i += j + 1
	}
	if lastErase < lastBar {
		t.Errorf("the bar was not erased at the end: ...%q", tty[max(0, len(tty)-60):])
	}
	if strings.Contains(stdout.String(), "\x1b") {
		t.Error("progress output reached stdout")
	}
}
