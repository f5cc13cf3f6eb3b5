//go:build !linux

package client

import "os"

// openSerial opens a serial device read-write; the line settings are left
// as they are (set them with stty first).
func openSerial(path string) (*os.File, error) { return os.OpenFile(path, os.O_RDWR, 0) }
