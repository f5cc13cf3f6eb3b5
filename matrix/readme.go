package matrix

import (
	"fmt"
	"os"
	"strings"

	"github.com/faultline-dev/faultline/internal/outfile"
)

// UpdateBetweenMarkers replaces what lies between the lines begin and end
// of the file with content (a README section that a command regenerates).
// Both markers must be present, each once, begin before end.
func UpdateBetweenMarkers(file, begin, end, content string) error {
	data, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	out, err := ReplaceBetweenMarkers(string(data), begin, end, content)
	if err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	if out == string(data) {
		return nil
	}
	// Atomically (the shared output rules): an interrupt never leaves a
	// truncated README; its permission bits are kept.
	return outfile.WriteFile(file, []byte(out))
}

// ReplaceBetweenMarkers is UpdateBetweenMarkers on a string.
func ReplaceBetweenMarkers(doc, begin, end, content string) (string, error) {
	i, j := strings.Index(doc, begin), strings.Index(doc, end)
	switch {
	case i < 0 || j < 0:
		return "", fmt.Errorf("no %q ... %q markers", begin, end)
	case strings.Count(doc, begin) > 1 || strings.Count(doc, end) > 1:
		return "", fmt.Errorf("the markers %q and %q must appear once each", begin, end)
	case j < i:
		return "", fmt.Errorf("%q comes before %q", end, begin)
	}
	if content != "" && !strings.HasSuffix(content, "\n") {
		content += "\n"
	}
	head := doc[:i+len(begin)]
	if !strings.HasSuffix(head, "\n") {
		head += "\n"
	}
	return head + content + doc[j:], nil
}
