package cli

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/faultline-dev/faultline/crashdump"
)

// The memory budget of analyze (--max-memory).
//
// Half of the budget is for the dumps in flight, the other half for what
// they share (the ELF index and unwind tables, the Go runtime, the
// collector's headroom). A dump's share is what crashdump.LoadWith may
// read into memory for it (the dump file, counted crashdump.DecodeFactor
// times, and region files too small to map); large region files are
// mapped and cost only the pages the walk touches. The number of dumps
// decoded at once (-j) is lowered until each gets at least
// minDumpShare, and the Go collector is given the budget as its soft
// limit (debug.SetMemoryLimit).
const (
	budgetFraction          = 4        // default budget: RAM / budgetFraction
	defaultBudgetUnknownRAM = 4 << 30  // when RAM cannot be told
	minBudget               = 64 << 20 // smaller budgets are refused
	minDumpShare            = 16 << 20 // -j is lowered so that each dump gets this much
)

// defaultBudget is --max-memory's default: a quarter of the machine's RAM.
func defaultBudget() int64 {
	if ram := physicalRAM(); ram > 0 {
		return max(ram/budgetFraction, minBudget)
	}
	return defaultBudgetUnknownRAM
}

// parseSize reads a byte count: a number with an optional unit (K, M, G,
// T, with or without "iB"/"B"; powers of 1024), or a percentage of the
// machine's RAM ("25%").
func parseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	if p, ok := strings.CutSuffix(t, "%"); ok {
		v, err := strconv.ParseFloat(p, 64)
		ram := physicalRAM()
		if err != nil || v <= 0 || v > 100 {
			return 0, fmt.Errorf("%q: want a percentage of RAM between 0 and 100", s)
		}
		if ram <= 0 {
			return 0, fmt.Errorf("%q: the machine's RAM is not known here: give a size such as 2GiB", s)
		}
		return int64(float64(ram) * v / 100), nil
	}
	upper := strings.ToUpper(t)
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"K", 1 << 10}, {"M", 1 << 20}, {"G", 1 << 30}, {"T", 1 << 40}} {
		for _, form := range []string{u.suffix + "IB", u.suffix + "B", u.suffix} {
			if rest, ok := strings.CutSuffix(upper, form); ok {
				upper, mult = strings.TrimSpace(rest), u.mult
				goto number
			}
		}
	}
	upper = strings.TrimSpace(strings.TrimSuffix(upper, "B"))
number:
	v, err := strconv.ParseFloat(upper, 64)
	if err != nil || v < 0 || v*float64(mult) > 1<<62 {
		return 0, fmt.Errorf("%q: want a size such as 512MiB, 4G or 25%%", s)
	}
	return int64(v * float64(mult)), nil
}

// budgetPlan is how a batch shares the memory budget.
type budgetPlan struct {
	budget  int64 // --max-memory
	jobs    int   // dumps decoded at once
	perDump int64 // crashdump.LoadOptions.MaxMemory
}

// planBudget lowers jobs until each dump in flight gets minDumpShare of
// half the budget; inflight is how many dumps are held at once per job
// (results waiting for their turn to be printed hold their dump only for
// HTML pages, which draw the stack from it).
func planBudget(budget int64, jobs, inflightPerJob int) budgetPlan {
	share := budget / 2
	jobs = max(min(jobs, int(share/(minDumpShare*int64(inflightPerJob)))), 1)
	per := min(share/int64(jobs*inflightPerJob), crashdump.MaxTotalSize)
	return budgetPlan{budget: budget, jobs: jobs, perDump: per}
}
