package yamlfile

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v4"

	"github.com/idemtest/idemtest/internal/regularfile"
	"github.com/idemtest/idemtest/internal/scenario"
)

// maxFileSize bounds a scenario or config file.
const maxFileSize = 8 << 20

// Read reads a file, rejects binary data, parses YAML and expands ${VAR} with lookupEnv. The
// root node is nil when the file cannot be decoded further; f.Errs says why.
func Read(path string, lookupEnv func(string) (string, bool)) (*File, *yaml.Node) {
	f := &File{Path: path, lookupEnv: lookupEnv}
	data, err := ReadFile(path)
	if err != nil {
		var ferr *fileError
		if errors.As(err, &ferr) {
			f.ErrAt(scenario.Pos{File: path}, ferr.hint, "%s", ferr.msg)
		} else {
			f.ErrAt(scenario.Pos{File: path}, "", "read: %v", errors.Unwrap(err))
		}
		return f, nil
	}
	if len(data) > maxFileSize {
		f.ErrAt(scenario.Pos{File: path}, "split it into several scenario files", "file is larger than %d MiB", maxFileSize>>20)
		return f, nil
	}
	if i := bytes.IndexByte(data, 0); i >= 0 || !utf8.Valid(data) {
		if i < 0 {
			i = firstInvalidUTF8(data)
		}
		line := bytes.Count(data[:i], []byte("\n")) + 1
		f.ErrAt(scenario.Pos{File: path, Line: line, Col: i - bytes.LastIndexByte(data[:i], '\n')}, "scenario files are UTF-8 YAML text",
			"not a text file (binary data at byte %d)", i)
		return f, nil
	}
	f.lines = strings.Split(string(data), "\n")
	var doc yaml.Node
	if err := f.decodeOne(data, &doc); err != nil {
		f.yamlError(err)
		return f, nil
	}
	if len(doc.Content) == 0 {
		f.ErrAt(scenario.Pos{File: path, Line: 1, Col: 1}, "a scenario needs at least name: and steps:", "empty file")
		return f, nil
	}
	root := doc.Content[0]
	f.expandEnv(root, lookupEnv)
	return f, root
}

func firstInvalidUTF8(b []byte) int {
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n <= 1 {
			return i
		}
		i += n
	}
	return 0
}

var yamlLine = regexp.MustCompile(`^yaml: (?:line (\d+): )?(.*)$`)

func (f *File) yamlError(err error) {
	msg := err.Error()
	line := 1
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		if m[1] != "" {
			line, _ = strconv.Atoi(m[1])
		}
		msg = m[2]
	}
	// The parser reports the line where it noticed the mistake, which may be far below it (an
	// unclosed "{" is noticed at the end of the file). The mistake is on the first line at
	// which a prefix of the file stops parsing. A prefix that fails mostly stays failing as it
	// grows, so a few parses find that line, where trying each line in turn parsed the file up
	// to 500 times (half a minute for 8 MiB of long lines): back from the reported line in
	// doubling steps to a prefix that parses, then a binary search between the two. Searching
	// back from the reported line, not up from the top, keeps a multi-line value above the
	// mistake (a prefix cut inside it fails too) from being blamed.
	fails := func(k int) bool {
		var n yaml.Node
		return yaml.Unmarshal([]byte(strings.Join(f.lines[:k], "\n")), &n) != nil
	}
	line = min(line, len(f.lines))
	if line >= 1 && fails(line) {
		bad, good := line, 0
		for step := 1; bad-step >= 1; step *= 2 {
			if !fails(bad - step) {
				good = bad - step
				break
			}
			bad -= step
		}
		for bad-good > 1 {
			mid := good + (bad-good)/2
			if fails(mid) {
				bad = mid
			} else {
				good = mid
			}
		}
		line = bad
	}
	line = max(line, 1)
	col := 1
	if line <= len(f.lines) {
		col = len(f.lines[line-1]) - len(strings.TrimLeft(f.lines[line-1], " \t")) + 1
	}
	hint := "check the indentation and quoting around this line"
	if strings.Contains(msg, "mapping values are not allowed") {
		hint = `a value that contains ": " or starts with "{" needs quotes: assert: 'x.count({a: 1}) == 1'`
	}
	f.ErrAt(scenario.Pos{File: f.Path, Line: line, Col: col}, hint, "invalid YAML: %s", msg)
}

// decodeOne parses the first YAML document of data into doc and reports a second one: a file
// is one scenario, and what follows a "---" would otherwise be dropped without a word. A bare
// trailing "---" is allowed.
func (f *File) decodeOne(data []byte, doc *yaml.Node) error {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil
		}
		return err
	}
	var next yaml.Node
	err := dec.Decode(&next)
	switch {
	case errors.Is(err, io.EOF):
	case err != nil:
		return err
	case len(next.Content) == 1 && next.Content[0].Kind == yaml.ScalarNode && next.Content[0].Tag == "!!null" && next.Content[0].Value == "":
	default:
		f.ErrAt(scenario.Pos{File: f.Path, Line: next.Line, Col: 1}, "put each scenario in a file of its own",
			"a second YAML document: a scenario file holds one document")
	}
	return nil
}

// fileError is a file idemtest will not read, with what to do about it.
type fileError struct {
	msg, hint string
}

func (e *fileError) Error() string { return e.msg }

// ReadFile reads a scenario or config file: a regular file of at most maxFileSize bytes. A
// named pipe, a device (a symlink to /dev/zero), a socket or a directory is refused before any
// byte is read, so that loading neither blocks nor reads without end.
func ReadFile(path string) ([]byte, error) {
	data, err := regularfile.ReadSmall(path, maxFileSize)
	var nr *regularfile.NotRegularError
	var tl *regularfile.TooLargeError
	switch {
	case errors.As(err, &nr):
		return nil, &fileError{msg: nr.Error(),
			hint: "scenario and config files are regular YAML files; remove it or rename it to something other than *.yaml"}
	case errors.As(err, &tl):
		return nil, &fileError{msg: fmt.Sprintf("file is larger than %d MiB", maxFileSize>>20), hint: "split it into several scenario files"}
	}
	return data, err
}

// HasTopLevelKey reports whether the first YAML document in data has key at the top level of
// its mapping, from the lines alone, in one pass: every top-level key of a block mapping starts
// at the indentation of the first one, and nothing else does but continuation lines of quoted
// or flow values. It errs towards true (a flow-style document is answered by whether the
// word appears at all): a file it keeps is decoded, and its errors reported.
func HasTopLevelKey(data []byte, key string) bool {
	data = bytes.TrimPrefix(data, []byte("\ufeff"))
	all := data
	indent := -1
	for len(data) > 0 {
		line := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			data = nil
		}
		line = bytes.TrimRight(line, "\r")
		trimmed := bytes.TrimLeft(line, " ")
		if len(trimmed) == 0 || trimmed[0] == '#' {
			continue
		}
		n := len(line) - len(trimmed)
		if indent < 0 {
			if trimmed[0] == '%' || bytes.Equal(bytes.TrimRight(trimmed, " \t"), []byte("---")) {
				continue
			}
			trimmed = bytes.TrimLeft(bytes.TrimPrefix(trimmed, []byte("--- ")), " ")
			if trimmed[0] == '{' || trimmed[0] == '!' || trimmed[0] == '&' {
				return bytes.Contains(all, []byte(key))
			}
			indent = n
		}
		if n != indent {
			continue
		}
		if n == 0 && (bytes.HasPrefix(trimmed, []byte("---")) || bytes.HasPrefix(trimmed, []byte("..."))) {
			return false // the first document ended
		}
		for _, q := range []string{key, `"` + key + `"`, `'` + key + `'`} {
			if rest, ok := bytes.CutPrefix(trimmed, []byte(q)); ok {
				rest = bytes.TrimLeft(rest, " \t")
				if len(rest) > 0 && rest[0] == ':' && (len(rest) == 1 || rest[1] == ' ' || rest[1] == '\t') {
					return true
				}
			}
		}
	}
	return false
}
