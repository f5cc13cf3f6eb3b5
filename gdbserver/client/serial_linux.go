//go:build linux

package client

import (
	"os"
	"syscall"
	"unsafe"
)

// openSerial opens a serial device (a Black Magic Probe's /dev/ttyACM0)
// read-write and, when it is a terminal, puts it in raw mode (no echo,
// no line editing, 8 bits), as the protocol needs. Other files (a FIFO)
// are used as they are.
func openSerial(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|syscall.O_NOCTTY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	var t syscall.Termios
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, f.Fd(), syscall.TCGETS, uintptr(unsafe.Pointer(&t))); e == 0 {
		// cfmakeraw(3)
		t.Iflag &^= syscall.IGNBRK | syscall.BRKINT | syscall.PARMRK | syscall.ISTRIP | syscall.INLCR | syscall.IGNCR | syscall.ICRNL | syscall.IXON
		t.Oflag &^= syscall.OPOST
		t.Lflag &^= syscall.ECHO | syscall.ECHONL | syscall.ICANON | syscall.ISIG | syscall.IEXTEN
		t.Cflag &^= syscall.CSIZE | syscall.PARENB
		t.Cflag |= syscall.CS8 | syscall.CLOCAL | syscall.CREAD
		t.Cc[syscall.VMIN], t.Cc[syscall.VTIME] = 1, 0
		syscall.Syscall(syscall.SYS_IOCTL, f.Fd(), syscall.TCSETS, uintptr(unsafe.Pointer(&t)))
	}
	return f, nil
}
