//go:build !unix

package cli

import (
	"errors"
	"testing"
)

func mkfifo(string) error { return errors.New("no FIFOs on this system") }

func nullDevice(t *testing.T) string {
	t.Skip("no character device to test with")
	return ""
}
