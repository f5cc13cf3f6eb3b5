package report

// AllocationsJSON is the "allocations" object of faultline.analysis/1: the
// device-side allocation recorder's table (firmware-samples/capture,
// faultline_allocrec.h) found in the dump by its symbol, its live blocks
// grouped by call site.
type AllocationsJSON struct {
	Symbol  string `json:"symbol"`
	Address string `json:"address"`
	// Error says why the table could not be used (then nothing else but
	// the symbol and address is set).
	Error   string `json:"error,omitempty"`
	Version int    `json:"version,omitempty"`
	// Layout is where the entries' layout came from: "DWARF" (the
	// firmware's debug types, checked against the header) or "header".
	Layout       string          `json:"layout,omitempty"`
	Capacity     int             `json:"capacity"`
	Depth        int             `json:"depth"`
	Count        int             `json:"count"`
	Dropped      uint32          `json:"dropped"`
	UnknownFrees uint32          `json:"unknown_frees"`
	StackScan    bool            `json:"stack_scan"`
	LiveBytes    uint64          `json:"live_bytes"`
	LiveBlocks   int             `json:"live_blocks"`
	Sites        []AllocSiteJSON `json:"sites"`
	// Problems are entries skipped (outside RAM, duplicated) and other
	// damage that left the rest usable; Notes are observations.
	Problems []string `json:"problems,omitempty"`
	Notes    []string `json:"notes,omitempty"`
}

// AllocSiteJSON is the live blocks of one call site (the same exact return
// address into the allocator's caller), most bytes first.
type AllocSiteJSON struct {
	Bytes  uint64 `json:"bytes"`
	Blocks int    `json:"blocks"`
	// Function, File and Line name the call site (the innermost inline
	// level of ret[0], looked up inside the call).
	Function string `json:"function,omitempty"`
	File     string `json:"file,omitempty"`
	Line     int    `json:"line,omitempty"`
	// Stack is the largest block's return addresses symbolized, with
	// their inline chains: method "lr" (exact, high confidence) for
	// ret[0], "stack-scan" (low: may be stale) for the rest.
	Stack []FrameJSON `json:"stack"`
	// Blocks lists the blocks as {address, size}, biggest first.
	List []AllocBlockJSON `json:"list"`
}

// AllocBlockJSON is one recorded block: its address, the size asked for,
// and its return addresses as recorded (Thumb bit clear), ret[0] first.
type AllocBlockJSON struct {
	Address string   `json:"address"`
	Size    uint32   `json:"size"`
	Returns []string `json:"returns"`
}
