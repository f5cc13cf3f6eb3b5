package cli

import "github.com/faultline-dev/faultline/analysis"

// StrategyNames lists every --unwinder value in order.
func StrategyNames() []string {
	var n []string
	for _, s := range analysis.Strategies() {
		n = append(n, s.Name)
	}
	return n
}

func validStrategy(name string) bool {
	for _, s := range analysis.Strategies() {
		if s.Name == name {
			return true
		}
	}
	return false
}
