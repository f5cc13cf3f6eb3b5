//go:build !linux

package cli

// physicalRAM: not known on this platform; the memory budget's default
// falls back to defaultBudgetUnknownRAM.
func physicalRAM() int64 { return 0 }
