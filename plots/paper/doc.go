package paper

import (
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/mpq/mpq/plots"
)

// The blocks of a document that Generate's tables replace lie between
// these markers (HTML comments, invisible in the rendered Markdown).
const (
	beginMarker = "<!-- mpq paper: %s -->\n"
	endMarker   = "<!-- mpq paper: end %s -->\n"
)

// Replace replaces, in doc, the text between the begin and end markers of
// every block. It fails, changing nothing, when a block's markers are
// missing or out of order.
func Replace(doc string, blocks map[string]string) (string, error) {
	names := make([]string, 0, len(blocks))
	for n := range blocks {
		names = append(names, n)
	}
	sort.Strings(names)
	var missing []string
	for _, n := range names {
		begin, end := fmt.Sprintf(beginMarker, n), fmt.Sprintf(endMarker, n)
		i := strings.Index(doc, begin)
		j := strings.Index(doc, end)
		if i < 0 || j < i {
			missing = append(missing, n)
			continue
		}
		doc = doc[:i+len(begin)] + blocks[n] + doc[j:]
	}
	if len(missing) > 0 {
		return "", fmt.Errorf("no markers %s … %s for the block(s) %s", strings.TrimSpace(fmt.Sprintf(beginMarker, "NAME")),
			strings.TrimSpace(fmt.Sprintf(endMarker, "NAME")), strings.Join(missing, ", "))
	}
	return doc, nil
}

// UpdateFile replaces the blocks in the file name (written under a
// temporary name and renamed).
func UpdateFile(name string, blocks map[string]string) error {
	b, err := os.ReadFile(name)
	if err != nil {
		return err
	}
	doc, err := Replace(string(b), blocks)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return plots.WriteFile(name, func(w io.Writer) error {
		_, err := io.WriteString(w, doc)
		return err
	})
}
