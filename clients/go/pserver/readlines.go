package pserver

import (
	"bufio"
	"bytes"
	"io"
	"os"
)

// ReadLines calls fn with each line of the file at path that begins in the byte range
// [start, end) (the input split of line formats): a range starting mid-line skips to the next
// line start, and the last line is read to its end even past end, so ranges that tile a file read
// every line exactly once. Lines come without their "\n" (or "\r\n"); a last line without a
// newline counts. An error from fn stops the reading and is returned.
func ReadLines(path string, start, end int64, fn func(line string) error) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	// A line begins at start only if start is the file's first byte or follows a newline.
	skipping := false
	if start > 0 {
		var b [1]byte
		n, err := f.ReadAt(b[:], start-1)
		if err != nil && err != io.EOF {
			return err
		}
		skipping = n == 1 && b[0] != '\n'
	}
	if _, err := f.Seek(start, io.SeekStart); err != nil {
		return err
	}
	r := bufio.NewReaderSize(f, 64<<10)
	pos := start
	if skipping {
		rest, err := r.ReadBytes('\n')
		pos += int64(len(rest))
		if err == io.EOF {
			return nil
		} else if err != nil {
			return err
		}
	}
	for pos < end {
		line, err := r.ReadBytes('\n')
		if err != nil && err != io.EOF {
			return err
		}
		if len(line) == 0 {
			return nil
		}
		pos += int64(len(line))
		line = bytes.TrimSuffix(line, []byte("\n"))
		line = bytes.TrimSuffix(line, []byte("\r"))
		if ferr := fn(string(line)); ferr != nil {
			return ferr
		}
		if err == io.EOF {
			return nil
		}
	}
	return nil
}
