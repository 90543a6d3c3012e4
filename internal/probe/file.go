package probe

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	"github.com/idemtest/idemtest/internal/regularfile"
	"github.com/idemtest/idemtest/internal/scenario"
)

// evalFile reads a file probe: a JSON document, JSON Lines as the list of their values (blank
// lines skipped), or an SQLite database (evalSQLite). Only a regular file is read (a FIFO or device is refused before it is opened,
// so a probe cannot hang on one), at most MaxBytes bytes (MaxRows lines), and the read stops when ctx ends.
func evalFile(ctx context.Context, fp *scenario.FileProbe, env map[string]any) (any, error) {
	if fp.Format == scenario.FileSQLite {
		return evalSQLite(ctx, fp, env)
	}
	path, err := evalText(fp.Path, env)
	if err != nil {
		return nil, err
	}
	if !filepath.IsAbs(path) {
		path = filepath.Join(fp.Dir, path)
	}
	b, err := readStateFile(ctx, path)
	if errors.Is(err, fs.ErrNotExist) && fp.Optional {
		if fp.Format == scenario.FileJSONLines {
			return []any{}, nil
		}
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if fp.Format == scenario.FileJSONLines {
		return jsonLines(path, b)
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return nil, fmt.Errorf("%s is not JSON: %w", path, err)
	}
	return v, nil
}

func readStateFile(ctx context.Context, path string) ([]byte, error) {
	b, err := regularfile.Read(ctx, path, MaxBytes)
	var nr *regularfile.NotRegularError
	var tl *regularfile.TooLargeError
	switch {
	case errors.As(err, &nr):
		return nil, fmt.Errorf("%s is %s: a file probe reads only regular files", path, nr.Error())
	case errors.As(err, &tl):
		return nil, fmt.Errorf("%s is over %d MiB: a file probe reads at most that", path, MaxBytes>>20)
	}
	return b, err
}

// jsonLines decodes each non-blank line; a line that is not JSON is an error naming it.
func jsonLines(path string, b []byte) ([]any, error) {
	out := []any{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 64<<10), len(b)+1)
	line := 0
	for sc.Scan() {
		line++
		t := bytes.TrimSpace(sc.Bytes())
		if len(t) == 0 {
			continue
		}
		if len(out) == MaxRows {
			return nil, fmt.Errorf("%s: %w", path, tooManyRows())
		}
		var v any
		if err := json.Unmarshal(t, &v); err != nil {
			return nil, fmt.Errorf("%s:%d is not JSON: %w", path, line, err)
		}
		out = append(out, v)
	}
	return out, sc.Err()
}
