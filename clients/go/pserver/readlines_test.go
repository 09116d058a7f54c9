package pserver

import (
	"math/rand"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// TestReadLinesTilesEveryLineOnce checks the input-split rule on random files: ranges that tile
// a file read every line exactly once, whatever the line lengths, "\r\n" endings, a missing last
// newline, or where the ranges cut.
func TestReadLinesTilesEveryLineOnce(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	dir := t.TempDir()
	for round := 0; round < 200; round++ {
		var lines []string
		var content strings.Builder
		endsWithNewline := false
		for i, n := 0, rng.Intn(30); i < n; i++ {
			line := strings.Repeat(string(rune('a'+rng.Intn(26))), rng.Intn(12)) + "#" + string(rune('0'+i%10))
			if rng.Intn(4) == 0 {
				line = ""
			}
			lines = append(lines, line)
			content.WriteString(line)
			endsWithNewline = i < n-1 || rng.Intn(2) == 0
			if endsWithNewline {
				if rng.Intn(3) == 0 {
					content.WriteString("\r\n")
				} else {
					content.WriteString("\n")
				}
			}
		}
		// A file ending in a newline has no extra empty last line; one that ends without one
		// still yields its last line, unless that line is empty (then there is nothing to read).
		if n := len(lines); n > 0 && lines[n-1] == "" && !endsWithNewline {
			lines = lines[:n-1]
		}
		path := filepath.Join(dir, "f.txt")
		if err := os.WriteFile(path, []byte(content.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		size := int64(content.Len())
		var got []string
		for start := int64(0); start < size || start == 0; {
			end := start + 1 + int64(rng.Intn(20))
			if err := ReadLines(path, start, end, func(line string) error {
				got = append(got, line)
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			start = end
			if size == 0 {
				break
			}
		}
		if strings.Join(got, "|") != strings.Join(lines, "|") {
			t.Fatalf("round %d: file %q read as %q, want %q", round, content.String(), got, lines)
		}
	}
}

func TestReadLinesRangeStartingMidLineSkipsToTheNextLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f.txt")
	if err := os.WriteFile(path, []byte("alpha\nbeta\ngamma"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := map[[2]int64][]string{
		{0, 1}:   {"alpha"},
		{1, 7}:   {"beta"},
		{6, 7}:   {"beta"},
		{7, 11}:  nil,
		{7, 12}:  {"gamma"},
		{11, 12}: {"gamma"},
		{7, 100}: {"gamma"},
		{12, 20}: nil,
		{3, 3}:   nil,
	}
	keys := make([][2]int64, 0, len(cases))
	for k := range cases {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i][0] < keys[j][0] })
	for _, k := range keys {
		var got []string
		if err := ReadLines(path, k[0], k[1], func(line string) error { got = append(got, line); return nil }); err != nil {
			t.Fatal(err)
		}
		if strings.Join(got, "|") != strings.Join(cases[k], "|") || len(got) != len(cases[k]) {
			t.Errorf("ReadLines [%d, %d) = %q, want %q", k[0], k[1], got, cases[k])
		}
	}
}
