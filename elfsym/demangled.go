package elfsym

// Demangled returns the readable form of a symbol name as the symbolizer
// prints it (a mangled C++ name demangled), or name itself when it is not
// mangled or cannot be demangled. Each distinct name is demangled once per
// File. Safe for concurrent use.
func (f *File) Demangled(name string) string { return f.demangled(name) }
