//go:build !linux

package cli

import "os"

// isTTY: without the Linux terminal ioctl, every character device counts.
func isTTY(*os.File) bool { return true }
