package analysis

import (
	"fmt"

	"github.com/faultline-dev/faultline/unwinders"
	"github.com/faultline-dev/faultline/unwinders/cfi"
	"github.com/faultline-dev/faultline/unwinders/exidx"
	"github.com/faultline-dev/faultline/unwinders/framepointer"
	"github.com/faultline-dev/faultline/unwinders/prologue"
	"github.com/faultline-dev/faultline/unwinders/stackscan"
)

// Strategy is one selectable unwinder (--unwinder NAME).
type Strategy struct {
	Name string
	// Chain returns the unwinders to run, in order, for this choice. A
	// single strategy still ends with the LR step so that a leaf frame at a
	// function's entry or a call through a bad pointer is never lost.
	Chain func() []unwinders.Unwinder
	// Available is false for strategies named by the design that this
	// build does not carry yet.
	Available bool
}

// Strategies is the explicit, ordered list of strategies. auto comes first;
// the order of the others is the order auto tries them.
func Strategies() []Strategy {
	return []Strategy{
		{Name: "auto", Available: true, Chain: autoChain},
		{Name: "cfi", Available: true, Chain: single(func() unwinders.Unwinder { return cfi.New() })},
		{Name: "exidx", Available: true, Chain: single(func() unwinders.Unwinder { return &exidx.Unwinder{} })},
		{Name: "prologue", Available: true, Chain: single(func() unwinders.Unwinder { return prologue.New() })},
		{Name: "framepointer", Available: true, Chain: single(func() unwinders.Unwinder { return framepointer.New() })},
		{Name: "stackscan", Available: true, Chain: single(func() unwinders.Unwinder { return stackscan.New(stackscan.Options{}) })},
	}
}

// autoChain is the evidence order of the auto strategy: the exception step
// is shared code inside the walk; then cfi, exidx (call sites only),
// prologue, framepointer, stackscan; the LR step closes the chain.
func autoChain() []unwinders.Unwinder {
	return []unwinders.Unwinder{
		cfi.New(),
		&exidx.Unwinder{},
		unwinders.LinkRegister{},
		prologue.New(),
		framepointer.New(),
		stackscan.New(stackscan.Options{}),
		unwinders.ExceptionFallback{},
	}
}

// single makes the chain of one strategy: the strategy, then the LR step
// for the frames where LR is provably the return address (a function at
// its entry, a call through a bad pointer), then the search for an
// exception frame when a handler clobbered LR.
func single(u func() unwinders.Unwinder) func() []unwinders.Unwinder {
	return func() []unwinders.Unwinder {
		return []unwinders.Unwinder{u(), unwinders.LinkRegister{}, unwinders.ExceptionFallback{}}
	}
}

// Lookup returns the named strategy.
func Lookup(name string) (Strategy, error) {
	for _, s := range Strategies() {
		if s.Name == name {
			if !s.Available {
				return s, fmt.Errorf("strategy %q is not available in this build yet", name)
			}
			return s, nil
		}
	}
	return Strategy{}, fmt.Errorf("unknown strategy %q", name)
}
