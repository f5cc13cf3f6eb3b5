package report

// MessageJSON is the crash's own message (design.md, "Arguments, locals,
// messages, logs"): what the firmware's reporting path was told, and
// where it was read from.
type MessageJSON struct {
	Text     string `json:"text"`
	File     string `json:"file,omitempty"`
	Line     int    `json:"line,omitempty"`
	Function string `json:"function,omitempty"`
	Source   string `json:"source"`
}
