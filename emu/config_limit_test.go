package emu

import (
	"strings"
	"testing"
)

// TestLimitReason: a run stopped exactly at the limit says only that; one
// whose last block overshot says why it ran past it.
func TestLimitReason(t *testing.T) {
	if got := limitReason(100, 100); got != "instruction limit of 100 reached" {
		t.Errorf("exact: %q", got)
	}
	if got := limitReason(10, 20); !strings.Contains(got, "limit of 10 reached") || !strings.Contains(got, "between translated blocks") {
		t.Errorf("overshoot: %q", got)
	}
}
