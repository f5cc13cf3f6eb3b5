package report

// VarJSON is one entry of frames[].args or frames[].locals.
type VarJSON struct {
	Name         string `json:"name"`
	Type         string `json:"type,omitempty"`
	Value        string `json:"value,omitempty"`
	Entry        bool   `json:"entry,omitempty"`
	OptimizedOut bool   `json:"optimized_out,omitempty"`
	// Note says why a value is missing that is not optimized out (its
	// memory is not in the dump, an expression not supported).
	Note string `json:"note,omitempty"`
	// Raw is the value's bytes when known, not part of the JSON (the
	// crash message reads pointers and numbers from it).
	Raw []byte `json:"-"`
}

// Text is the name=value form the text report shows.
func (v VarJSON) Text() string {
	switch {
	case v.Value != "" && v.Entry:
		return v.Name + "@entry=" + v.Value
	case v.Value != "":
		return v.Name + "=" + v.Value
	case v.OptimizedOut:
		return v.Name + "=<optimized out>"
	}
	return v.Name + "=<unavailable>"
}
