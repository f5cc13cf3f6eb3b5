package rtos

// addrSet is a set of addresses for the cycle checks of list walks: a
// short array searched in order (a kernel list holds a few items), a map
// once it outgrows that. The zero value is empty.
type addrSet struct {
	few  [16]uint32
	n    int
	many map[uint32]bool
}

func (s *addrSet) has(a uint32) bool {
	if s.many != nil {
		return s.many[a]
	}
	for _, x := range s.few[:s.n] {
		if x == a {
			return true
		}
	}
	return false
}

func (s *addrSet) add(a uint32) {
	switch {
	case s.many != nil:
		s.many[a] = true
	case s.n < len(s.few):
		s.few[s.n] = a
		s.n++
	default:
		s.many = make(map[uint32]bool, 2*len(s.few))
		for _, x := range s.few {
			s.many[x] = true
		}
		s.many[a] = true
	}
}
