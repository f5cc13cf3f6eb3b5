package emu

import (
	"strings"
	"testing"
)

// TestLimitReason: a run stopped exactly at the limit says only that; one
// that an exception diverted past it says why.
func TestLimitReason(t *testing.T) {
	if got := limitReason(100, 100); got != "instruction limit of 100 reached" {
		t.Errorf("exact: %q", got)
	}
	if got := limitReason(10, 20); !strings.Contains(got, "limit of 10 reached") || !strings.Contains(got, "exception taken at the limit") {
		t.Errorf("overshoot: %q", got)
	}
}
