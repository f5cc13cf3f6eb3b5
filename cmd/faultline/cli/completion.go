package cli

import (
	"regexp"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// cortexMNames are the values shell completion offers for --cpu.
var cortexMNames = []string{"cortex-m0", "cortex-m0plus", "cortex-m3", "cortex-m4", "cortex-m7", "cortex-m23", "cortex-m33"}

// choiceList finds "a|b|c" in a flag's usage text: its values.
var choiceList = regexp.MustCompile(`[a-z0-9-]+(?:\|[a-z0-9-]+)+`)

// registerCompletions makes shell completion offer values for the flags
// that take one of a few: --unwinder, --cpu, and every flag whose help
// lists its values as "a|b|c" (--format, --to...). It walks the whole
// tree, so a flag added later gets its values too.
func registerCompletions(root *cobra.Command) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		c.Flags().VisitAll(func(f *pflag.Flag) {
			var values []string
			switch f.Name {
			case "unwinder":
				values = StrategyNames()
			case "cpu":
				values = cortexMNames
			default:
				if m := choiceList.FindString(f.Usage); m != "" && f.Value.Type() == "string" {
					values = strings.Split(m, "|")
				}
			}
			if values != nil {
				c.RegisterFlagCompletionFunc(f.Name, cobra.FixedCompletions(values, cobra.ShellCompDirectiveNoFileComp))
			}
		})
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}
