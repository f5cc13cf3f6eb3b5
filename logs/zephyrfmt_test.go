package logs

import "testing"

// TestRenderZ: lines as real Zephyr 3.5's console printed them
// (qemu_cortex_m3, CONFIG_LOG_THREAD_ID_PREFIX; freq 100 Hz ticks as
// log_output_timestamp_freq_set keeps them, divider 1).
func TestRenderZ(t *testing.T) {
	zb := ZephyrBuffer{Freq: 100, Div: 1}
	for _, c := range []struct {
		e    Entry
		want string
	}{
		{Entry{Timestamp: 63, Level: "inf", Source: "app", Text: "warmup 19 of 40", Thread: "0x200005e0", ThreadName: "main"},
			"[00:00:00.630,000] <inf> [main] app: warmup 19 of 40\n"},
		{Entry{Timestamp: 88, Level: "err", Source: "os", Text: "Halting system", Thread: "0x00000000", ThreadName: "irq"},
			"[00:00:00.880,000] <err> [irq] os: Halting system\n"},
		{Entry{Timestamp: 84, Level: "inf", Source: "app", Text: "blob", Data: "010203fe6869007f090a"},
			"[00:00:00.840,000] <inf> app: blob\n                              01 02 03 fe 68 69 00 7f  09 0a                   |....hi.. ..      \n"},
		{Entry{Level: "raw", Text: "printk line 7\n"}, "printk line 7\n"},
	} {
		if got := renderZ(c.e, zb); got != c.want {
			t.Errorf("renderZ:\n got %q\nwant %q", got, c.want)
		}
	}
	// Without freq: raw counts, as log_output prints them unformatted.
	if got := renderZ(Entry{Timestamp: 63, Level: "wrn", Text: "x"}, ZephyrBuffer{}); got != "[00000063] <wrn> x\n" {
		t.Errorf("raw timestamp: %q", got)
	}
}

// TestCInt: Zephyr's cbprintf, as the real console printed
// "n=%d ll=%lld u=%llu h=%hx %-4c| %+d % d %#o %#x %.0d|".
func TestCInt(t *testing.T) {
	for _, c := range []struct {
		got, want string
	}{
		{cInt(false, 0x2345, 16, "", -1, -1, false), "2345"},
		{cInt(false, 5, 10, "+", -1, -1, false), "+5"},
		{cInt(false, 6, 10, " ", -1, -1, false), " 6"},
		{cInt(false, 8, 8, "#", -1, -1, false), "010"},
		{cInt(false, 255, 16, "#", -1, -1, false), "0xff"},
		{cInt(false, 0, 10, "", -1, 0, false), "0"}, // C would print nothing
		{cInt(true, 42, 10, "0", 5, -1, false), "-0042"},
		{cInt(false, 42, 10, "-", 5, -1, false), "42   "},
		{cInt(false, 7, 10, "", -1, 3, false), "007"},
		{pad("q", "-", 4), "q   "},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}
