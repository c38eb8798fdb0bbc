// Package boundedread reads the files the harness is given (reports,
// scripts, scenarios, state files, histories) with a size limit: a path
// that is not a regular file (a device such as /dev/zero, a FIFO, a
// directory; symlinks are followed first) or is larger than its limit is
// refused before any of it is read, with an error naming the file, the
// limit and the fix. Nothing the harness reads can exhaust its memory or
// block it forever.
package boundedread

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
)

// Common limits of the files the harness reads.
const (
	KiB = 1 << 10
	MiB = 1 << 20
	GiB = 1 << 30
)

// Check refuses path unless it is a regular file of at most limit bytes
// (limit <= 0: any size). what names the file's role in the error
// ("report.json", "--state file"); fix says what to do instead.
func Check(path string, limit int64, what, fix string) (os.FileInfo, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, statError(what, path, fix, err)
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s %s is not a regular file (%s): the harness reads only regular files; %s", what, path, Kind(st.Mode()), fix)
	}
	if limit > 0 && st.Size() > limit {
		return nil, tooLarge(what, path, st.Size(), limit, fix)
	}
	return st, nil
}

// File reads the whole of path after Check; a file that grows past limit
// while it is read is refused too.
func File(path string, limit int64, what, fix string) ([]byte, error) {
	r, err := Open(path, limit, what, fix)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return io.ReadAll(r)
}

// Open opens path after Check for reading as a stream: the reader fails
// (naming the file and the limit) if more than limit bytes turn up.
func Open(path string, limit int64, what, fix string) (io.ReadCloser, error) {
	if _, err := Check(path, limit, what, fix); err != nil {
		return nil, err
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", what, path, err)
	}
	if limit <= 0 {
		return f, nil
	}
	return &limited{f: f, left: limit, err: tooLarge(what, path, -1, limit, fix)}, nil
}

type limited struct {
	f    *os.File
	left int64
	err  error
}

func (l *limited) Read(p []byte) (int, error) {
	if l.left <= 0 {
		// One byte more than the limit tells a file of exactly limit bytes from a larger one.
		var one [1]byte
		if n, _ := l.f.Read(one[:]); n > 0 {
			return 0, l.err
		}
		return 0, io.EOF
	}
	if int64(len(p)) > l.left {
		p = p[:l.left]
	}
	n, err := l.f.Read(p)
	l.left -= int64(n)
	return n, err
}

func (l *limited) Close() error { return l.f.Close() }

// IsTooLarge reports whether err is a refusal of File or Open.
func IsTooLarge(err error) bool { return errors.As(err, new(*TooLargeError)) }

// TooLargeError is a file over its limit.
type TooLargeError struct{ msg string }

func (e *TooLargeError) Error() string { return e.msg }

func tooLarge(what, path string, size, limit int64, fix string) error {
	has := "grows past"
	if size >= 0 {
		has = fmt.Sprintf("holds %d bytes, over", size)
	}
	return &TooLargeError{fmt.Sprintf("%s %s %s the limit of %d bytes for it: %s", what, path, has, limit, fix)}
}

// statError is a file that cannot be looked at: "what path: no such file
// or directory: fix". It wraps err (errors.Is(err, fs.ErrNotExist) holds)
// without repeating the path the way *PathError does ("stat path: ...").
func statError(what, path, fix string, err error) error {
	cause := err
	var pe *fs.PathError
	if errors.As(err, &pe) {
		cause = pe.Err
	}
	return &wrapped{msg: fmt.Sprintf("%s %s: %v: %s", what, path, cause, fix), err: err}
}

type wrapped struct {
	msg string
	err error
}

func (e *wrapped) Error() string { return e.msg }
func (e *wrapped) Unwrap() error { return e.err }

// Kind names the kind of a file that is not a regular one: "a
// directory", "a character device", "a named pipe", …; any other mode is
// named by its letters ("mode ...").
func Kind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeSocket != 0:
		return "a socket"
	}
	return "mode " + m.String()
}
